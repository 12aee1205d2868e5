"""Keeping secrets out of what sagepy shows and keeps on disk.

One rule decides which values are secret: a command-line option or URL query parameter whose *name*
mentions a token, password, key, … (`--api-key X`, `?token=…`), and the password of `user:pass@`. It masks
the servers that `sage tools list` prints and everything sagepy writes to `.sage/logs/`. `looks_like_token`
judges a value by itself, for the places where a name is expected and a token would be a slip.

What sagepy keeps under `.sage/` (server logs, OAuth tokens, state) is for its user only: directories are
created 0700 and log files 0600, and existing ones are narrowed to those modes when sagepy opens them.

A durable run journals what `env`/`env_or` read, so that a resume replays it; the read of a variable whose name
looks secret (`secret_variable`) is journaled wrapped (`{"secret": value}`), and `shown_journal_value` is what
everything that shows journal values (`sage runs show`, the console, cassettes) shows for any outcome.
"""
from __future__ import annotations

import os
import re
import shlex
from typing import Any, Iterable, TextIO
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

MASK = "****"
# Option and parameter names whose values are secrets, in command lines and URL queries.
_SECRET = re.compile(r"token|secret|passw|pwd|api[-_]?key|apikey|access[-_]?key|private[-_]?key|auth|"
                     r"credential|bearer|signature|sig\b", re.IGNORECASE)
# A URL inside free text (a log record, an exception message), up to white space or a quote.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")


def masked_command_line(command: str, args: list[str]) -> str:
    """The command line, shell-quoted, with secret values replaced: the value after `--token`, and the
    value of `--api-key=…` or `PASSWORD=…`; URLs among the arguments are masked as `mask_url` does."""
    words = [shlex.quote(command)]
    secret_next = False
    for arg in args:
        name, sep, _value = arg.partition("=")
        masked = secret_next and not arg.startswith("-")
        if masked:
            words.append(MASK)
        elif sep and "://" not in name and _SECRET.search(name):
            words.append(f"{shlex.quote(name)}={MASK}")
        else:
            words.append(shlex.quote(mask_urls(arg)))
        secret_next = not masked and arg.startswith("-") and not sep and bool(_SECRET.search(arg))
    return " ".join(words)


def mask_url(url: str) -> str:
    """A URL with its password and secret query values replaced."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", f":{MASK}@", 1)
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if _SECRET.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_urls(text: str) -> str:
    """`text` with every URL in it masked as `mask_url` does."""
    def mask(match: re.Match) -> str:
        try:
            return mask_url(match.group(0))
        except ValueError:  # not a URL after all (an invalid port, brackets): nothing of it is kept
            return MASK
    return _URL_IN_TEXT.sub(mask, text)


# The password of a `scheme://user:password@host` URL and of a libpq key/value `password=…` (quoted or not).
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s/@:\"']*:)([^\s@\"']*)(@)")
_CONNINFO_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'\"]+)", re.IGNORECASE)
PASSWORD_MASK = "***"


def mask_passwords(text: str, *sources: str) -> str:
    """`text` with every password of a URL or key/value conninfo in it shown as `***` (a state database URL
    in messages and quoted grove.toml lines, SPEC §14.1), and, wherever it appears, any password that one of
    `sources` (the URLs the text came from) holds."""
    secrets_found = [p for source in sources for p in _passwords_of(source)]
    for secret in secrets_found:
        if secret:
            text = text.replace(secret, PASSWORD_MASK)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + PASSWORD_MASK + m.group(3), text)
    return _CONNINFO_PASSWORD.sub(lambda m: m.group(1) + PASSWORD_MASK, text)


def _passwords_of(source: str) -> list[str]:
    found = [m.group(2) for m in _URL_PASSWORD.finditer(source) if m.group(2)]
    for m in _CONNINFO_PASSWORD.finditer(source):
        value = m.group(2)
        found.append(value[1:-1].replace("\\'", "'").replace("\\\\", "\\") if value.startswith("'") else value)
    found += [unquote(p) for p in found if unquote(p) != p]
    return sorted(set(found), key=len, reverse=True)


# Prefixes of well-known token formats (GitHub, GitLab, Slack, OpenAI-style keys, AWS access keys).
_TOKEN_PREFIX = re.compile(r"(gh[pousr]_|github_pat_|glpat-|xox[abprs]-|sk-|AKIA)")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def looks_like_token(value: str) -> bool:
    """Whether a value meant to be an environment variable's *name* looks like a secret pasted in its place:
    not a variable name at all, a well-known token prefix, a long mix of lower case, upper case and digits,
    or a long run of letters and digits without a word break (names are words: `GITHUB_TOKEN`,
    `calendar_key_2`)."""
    if not _VARIABLE_NAME.match(value) or _TOKEN_PREFIX.match(value):
        return True
    digits = any(c.isdigit() for c in value)
    mixed = digits and any(c.islower() for c in value) and any(c.isupper() for c in value)
    return len(value) >= 20 and mixed or len(value) >= 32 and digits and "_" not in value


def private_directory(path: str) -> None:
    """Create `path` and its missing parents with mode 0700, and narrow `.sage` and everything below it on
    the way to `path` to 0700 (a directory made by an older sagepy, or under a looser umask)."""
    path = os.path.abspath(path)
    missing = []
    directory = path
    while not os.path.isdir(directory) and os.path.dirname(directory) != directory:
        missing.append(directory)
        directory = os.path.dirname(directory)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:  # made meanwhile by another process is fine; a file in the way is not
            if not os.path.isdir(directory):
                raise
    parts = path.split(os.sep)
    if ".sage" in parts:
        first = len(parts) - 1 - parts[::-1].index(".sage")
        for end in range(first + 1, len(parts) + 1):
            directory = os.sep.join(parts[:end])
            if not os.path.islink(directory):
                try:
                    os.chmod(directory, 0o700)
                except PermissionError:  # someone else's directory: theirs to protect, and no reason to stop
                    pass


def open_private_log(path: str) -> TextIO:
    """Open a log file for appending, created 0600 (an existing one is narrowed to 0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)
        return os.fdopen(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


# Environment variables whose values a durable run journals but never shows (docs/durable.md, "Secrets"): a name
# that mentions one of these words (any case), or one that grove.toml names in a `*_env` key.
_SECRET_VARIABLE = re.compile("KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
SECRET_OUTCOME = "secret"   # the key of a secret read's journaled outcome: {"secret": value}


def secret_variable(name: Any, named: Iterable[str] = ()) -> bool:
    """Whether the value of environment variable `name` is a secret: its name looks like one, or grove.toml
    names it in a `*_env` key (`named`)."""
    return isinstance(name, str) and (_SECRET_VARIABLE.search(name) is not None or name in named)


def env_names_in(config: Any) -> frozenset[str]:
    """Every variable name grove.toml gives as the value of a `*_env` key, in any table (`[llm] api_key_env`,
    `[tools.X] token_env`, …)."""
    found: set[str] = set()
    stack = [config]
    while stack:
        table = stack.pop()
        if isinstance(table, dict):
            for key, value in table.items():
                if isinstance(key, str) and key.endswith("_env") and isinstance(value, str):
                    found.add(value)
                stack.append(value)
        elif isinstance(table, list):
            stack.extend(table)
    return frozenset(found)


def secret_outcome(kind: str, target: str, outcome: Any) -> bool:
    """Whether a journal record's outcome is a secret read's (`{"secret": value}`): no other `io` step's
    outcome is an object."""
    return kind == "io" and isinstance(outcome, dict) and len(outcome) == 1 and SECRET_OUTCOME in outcome


def shown_journal_value(kind: str, target: str, outcome: Any) -> Any:
    """A journal record's outcome (its kind, target and outcome) as anything that shows it shows it: a secret
    read's as `***`, every other as it is. The one function for `sage runs show` (text and JSON), the web
    console and cassettes."""
    return PASSWORD_MASK if secret_outcome(kind, target, outcome) else outcome
