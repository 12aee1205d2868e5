"""A throwaway certificate authority and a server certificate for 127.0.0.1, made fresh by each test run.

`make_tls_files(dir)` writes the CA's certificate (`ca.pem`), the server's certificate and key, a second,
unrelated CA (`other_ca.pem`, a bundle that does not vouch for the server) and an OpenSSL hashed directory
holding only the first CA (`ca_dir/<subject hash>.0`), for `SSL_CERT_DIR`. Names and extensions follow what
strict verifiers ask for (Python 3.13's default context sets VERIFY_X509_STRICT).
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import ssl
import subprocess
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class TlsFiles:
    ca: str          # the CA that signed the server's certificate
    other_ca: str    # a CA that did not
    ca_dir: str      # a hashed directory holding `ca` only
    cert: str        # the server's certificate (127.0.0.1, localhost)
    key: str         # its private key

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        return context


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "sagepy tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _validity(builder: x509.CertificateBuilder) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.timezone.utc)
    return builder.not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))


def _make_ca(common_name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    builder = _validity(x509.CertificateBuilder().subject_name(name).issuer_name(name)
                        .public_key(key.public_key()).serial_number(x509.random_serial_number()))
    builder = (builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                            crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    return builder.sign(key, hashes.SHA256()), key


def _make_server(ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey) -> tuple[x509.Certificate,
                                                                                     ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _validity(x509.CertificateBuilder().subject_name(_name("127.0.0.1")).issuer_name(ca.subject)
                        .public_key(key.public_key()).serial_number(x509.random_serial_number()))
    ca_ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                           x509.DNSName("localhost")]), critical=False)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False))
    return builder.sign(ca_key, hashes.SHA256()), key


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _subject_hash(path: str) -> str:
    """OpenSSL's subject-name hash, the file name `SSL_CERT_DIR` lookups use."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl is needed to name certificates in a hashed directory")
    return subprocess.run([openssl, "x509", "-subject_hash", "-noout", "-in", path], check=True,
                          capture_output=True, text=True).stdout.strip()


def make_tls_files(directory: str) -> TlsFiles:
    ca, ca_key = _make_ca("sagepy throwaway CA")
    other_ca, _ = _make_ca("sagepy unrelated CA")
    server, server_key = _make_server(ca, ca_key)
    files = TlsFiles(ca=os.path.join(directory, "ca.pem"), other_ca=os.path.join(directory, "other_ca.pem"),
                     ca_dir=os.path.join(directory, "ca_dir"), cert=os.path.join(directory, "server.pem"),
                     key=os.path.join(directory, "server.key"))
    with open(files.ca, "wb") as f:
        f.write(_pem(ca))
    with open(files.other_ca, "wb") as f:
        f.write(_pem(other_ca))
    with open(files.cert, "wb") as f:
        f.write(_pem(server))
    with open(files.key, "wb") as f:
        f.write(server_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()))
    os.makedirs(files.ca_dir)
    shutil.copy(files.ca, os.path.join(files.ca_dir, _subject_hash(files.ca) + ".0"))
    return files
