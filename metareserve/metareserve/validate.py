"""One vocabulary for values that come from files and flags (reservations, hosts files, layouts).

Every value that later reaches an ssh command line, a node's shell, a path or a config file is
checked here, once, when it is loaded: a value that passes is a single token with no whitespace,
no shell metacharacter and no leading ``-``, so it can never become an option or a command.
Each check returns the value or raises :class:`UsageError` naming the field.
"""
from __future__ import annotations

import ipaddress
import re

from .errors import UsageError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
HOSTNAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?")
PATH = re.compile(r"(?:~|/)?[A-Za-z0-9_.+@%,:=/~-]+")
PROGRAM = re.compile(r"[A-Za-z0-9_.+-]+")
RELEASE = re.compile(r"[0-9]{1,4}(?:\.[0-9]{1,4}){1,3}")


def _bad(field: str, value, rule: str) -> UsageError:
    return UsageError(f"{field} {value!r} is not allowed: {rule}")


def release_numbers(value) -> tuple[int, ...] | None:
    """The numbers of a package release such as ``26.0.1`` (two to four numbers of up to 4 digits),
    to compare with another; None for anything else (a suffix, a word, a non-string)."""
    if not isinstance(value, str) or not RELEASE.fullmatch(value):
        return None
    return tuple(int(n) for n in value.split("."))


def name(value, field: str = "name") -> str:
    """A name used in paths, logs and layouts: ``[A-Za-z0-9][A-Za-z0-9_.-]*``, never ``..``."""
    if not isinstance(value, str) or not NAME.fullmatch(value) or ".." in value:
        raise _bad(field, value, "use 1-63 letters, digits, '_', '.' or '-', starting with a letter or digit")
    return value


def user(value, field: str = "user") -> str:
    """A login name: ``[a-z_][a-z0-9_-]*``."""
    if not isinstance(value, str) or not USER.fullmatch(value):
        raise _bad(field, value, "a user name is lower-case letters, digits, '_' or '-', not starting with a digit or '-'")
    return value


def host(value, field: str = "host") -> str:
    """A host name (or ssh alias) or an IP address."""
    if isinstance(value, str) and len(value) <= 253:
        try:
            ipaddress.ip_address(value)
            return value
        except ValueError:
            if HOSTNAME.fullmatch(value):
                return value
    raise _bad(field, value, "give a host name or an IP address")


def address(value, field: str = "address") -> str:
    """A cluster address daemons bind to and configs name: an IP address or a host name."""
    return host(value, field)


def port(value, field: str = "port") -> int:
    """A TCP port, 1-65535."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise _bad(field, value, "a port is a whole number from 1 to 65535")
    return value


def path(value, field: str = "path") -> str:
    """A file path: absolute, ``~/``-relative or relative, of safe characters (no whitespace,
    quotes, ``$``, ``;``, ``..`` components or leading ``-``)."""
    if (not isinstance(value, str) or not PATH.fullmatch(value) or value.startswith("-")
            or "//" in value or ".." in value.split("/")):
        raise _bad(field, value, "a path of letters, digits and _ . + @ % , : = / ~ - (no spaces, "
                                 "quotes, '..' parts or leading '-')")
    return value


def program(value, field: str = "python") -> str:
    """An interpreter run on a node: a bare program name (``python3``) or an absolute path."""
    if isinstance(value, str) and (PROGRAM.fullmatch(value) and not value.startswith("-")
                                   or value.startswith("/") and _is_path(value)):
        return value
    raise _bad(field, value, "give a program name such as python3 or an absolute path")


def _is_path(value: str) -> bool:
    try:
        path(value)
        return True
    except UsageError:
        return False
