"""The one trust store of sagepy's HTTPS: the operating system's certificates, as one shared SSL context.

The LLM client, the `Http` tool and MCP over HTTP all verify servers against `trust_store()`, so a CA that
the system trusts (a company's, say) works for all three or for none.

How the system's store is read:
- macOS and Windows: through `truststore`, which asks the platform's own verifier (Keychain, CryptoAPI).
- Elsewhere (Linux, BSD): the system's store is the files OpenSSL is configured with. The context loads
  OpenSSL's default locations, which honour `SSL_CERT_FILE` and `SSL_CERT_DIR`, and, when a Python built
  elsewhere points OpenSSL at locations that do not exist, the distributions' usual bundle instead; this is
  truststore's own rule there, applied once. truststore itself is not used on these systems: it loads those
  files again for every TLS connection (about 50 ms for a distribution's bundle), and OpenSSL before 3.4
  keeps a further directory lookup for each reload (truststore issue #212), which a context shared by a whole
  run would pay at every later handshake.

The context is built on first use, since reading the store takes tens of milliseconds and most programs make
no HTTPS request, and is then shared: an SSL context is safe to use from several threads.
"""
from __future__ import annotations

import os
import re
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

# Where distributions keep the system bundle, for Pythons whose OpenSSL looks elsewhere (truststore's list).
_CA_FILE_CANDIDATES = (
    "/etc/ssl/cert.pem",                                   # Alpine, Arch, Fedora, RHEL 9+, BSD
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",   # Fedora, RHEL
    "/etc/pki/tls/cert.pem",                               # older Fedora, RHEL, CentOS
    "/etc/ssl/certs/ca-certificates.crt",                  # Debian, Ubuntu
    "/etc/ssl/ca-bundle.pem",                              # SUSE
)
_HASHED_CERT_NAME = re.compile(r"[0-9a-fA-F]{8}\.[0-9]+")

_lock = threading.Lock()
_context: "ssl.SSLContext | None" = None


def trust_store() -> "ssl.SSLContext":
    """The client SSL context that verifies servers against the operating system's certificates."""
    global _context
    with _lock:
        if _context is None:
            _context = _platform_context() if sys.platform in ("darwin", "win32") else _openssl_context()
        return _context


def _platform_context() -> "ssl.SSLContext":
    import ssl

    import truststore
    return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _openssl_context() -> "ssl.SSLContext":
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)   # verifies the chain and the host name
    defaults = ssl.get_default_verify_paths()
    if defaults.cafile or (defaults.capath and _holds_certificates(defaults.capath)):
        context.set_default_verify_paths()
    else:
        bundle = next((path for path in _CA_FILE_CANDIDATES if os.path.isfile(path)), None)
        if bundle is not None:
            context.load_verify_locations(cafile=bundle)
    return context


def _holds_certificates(directory: str) -> bool:
    """Whether `directory` holds certificates under OpenSSL's hashed names (`9d66eef0.0`)."""
    try:
        return any(_HASHED_CERT_NAME.fullmatch(name) for name in os.listdir(directory))
    except OSError:
        return False


def failure_reason(exc: BaseException) -> str | None:
    """What went wrong with TLS, when an SSL error caused `exc`: `certificate verify failed: <why>` when the
    store did not vouch for the server, else OpenSSL's reason (`TLS error: wrong version number`); None when
    TLS was not the problem. The exception chain is searched, since HTTP clients wrap the SSL error."""
    import ssl

    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {link.verify_message}"
        if isinstance(link, ssl.SSLError):
            return "TLS error: " + _OPENSSL_DECORATION.sub("", link.strerror or link.reason or str(link))
        link = link.__cause__ or link.__context__
    return None


# The library code and source location OpenSSL's messages are wrapped in: `[SSL: CODE] reason (_ssl.c:1006)`.
_OPENSSL_DECORATION = re.compile(r"^\[[^\]]*\]\s*|\s*\(_ssl\.c:\d+\)$")
