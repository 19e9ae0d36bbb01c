"""What a CloudLab reservation asks for (:class:`Request`) and who asks (:class:`Credentials`).

Both are validated here, from Python values or from the strings ``-O key=value`` passes; every
refusal is one :class:`UsageError` line naming the file or option and what to do.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import stat
from pathlib import Path

from ...errors import UsageError
from ...model import read_yaml

ENV_CREDENTIALS = "SAE_CLOUDLAB_CREDENTIALS"
DEFAULT_IMAGE = "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD"
SITES = {"utah": "Utah", "wisconsin": "Wisconsin", "clemson": "Clemson"}
_SLICE_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9-]{0,18}")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


@dataclasses.dataclass(frozen=True)
class Credentials:
    """A CloudLab account, as its credentials file (``path``) gives it: the PEM certificate and
    (unencrypted) key the aggregates are called with and the ``ca_bundle`` their certificates are
    verified against (None: not checked); project and user; the SSH keys the nodes are reached
    with (no private key: ssh's own)."""

    path: Path
    cert: Path
    key: Path
    ca_bundle: Path | None
    project: str
    user: str
    ssh_public_key: Path
    ssh_private_key: Path | None

    @property
    def user_urn(self) -> str:
        """The account's GENI URN (CloudLab accounts live at the emulab.net authority)."""
        return f"urn:publicid:IDN+emulab.net+user+{self.user}"

    def public_key_text(self) -> str:
        return self.ssh_public_key.read_text().strip()


def _private(path: Path, what: str, source: Path) -> Path:
    """``path`` if it exists and only its owner can read it; UsageError saying the fix otherwise."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise UsageError(f"{source}: {what} {path} does not exist; download it from the CloudLab "
                         f"portal (see docs/cloudlab.md) or fix the path") from None
    if mode & 0o077:
        raise UsageError(f"{path}: {what} is readable by others (mode {stat.filemode(mode)}); "
                         f"run 'chmod 600 {path}'")
    return path


def load_credentials(path: str | os.PathLike | None = None) -> Credentials:
    """Read the credentials file (default ``$SAE_CLOUDLAB_CREDENTIALS``, else ``cloudlab.yaml`` in
    ``$SAE_HOME``, default ~/.sae).

    The file and the private key must be readable by their owner only.
    Raises UsageError naming the file and what to do when anything is missing or too open.
    """
    home = Path(os.environ.get("SAE_HOME", Path.home() / ".sae"))
    p = Path(os.path.expanduser(str(path or os.environ.get(ENV_CREDENTIALS) or home / "cloudlab.yaml")))
    if not p.exists():
        raise UsageError(f"{p}: CloudLab credentials file not found; create it as docs/cloudlab.md "
                         f"says (cert, key, project, user, ssh_public_key) and 'chmod 600 {p}'")
    _private(p, "credentials file", p)
    data = read_yaml(p, "CloudLab credentials file")
    if not isinstance(data, dict):
        raise UsageError(f"{p}: expected a mapping with cert, key, project, user, ssh_public_key")
    missing = [k for k in ("cert", "project", "user", "ssh_public_key") if not data.get(k)]
    if missing:
        raise UsageError(f"{p}: missing {', '.join(missing)} (see docs/cloudlab.md)")
    unknown = set(data) - {"cert", "key", "project", "user", "ssh_public_key", "ssh_private_key", "ca_bundle"}
    if unknown:
        raise UsageError(f"{p}: unknown key(s) {', '.join(sorted(unknown))}")

    def path_of(key: str) -> Path:
        q = Path(os.path.expanduser(str(data[key])))
        return q if q.is_absolute() else p.parent / q

    cert = path_of("cert")
    key = path_of("key") if data.get("key") else cert
    if not cert.exists():
        raise UsageError(f"{p}: certificate {cert} does not exist; download it from the CloudLab "
                         f"portal (Download Credentials) or fix 'cert'")
    _private(key, "private key", p)
    pub = path_of("ssh_public_key")
    if not pub.exists():
        raise UsageError(f"{p}: ssh_public_key {pub} does not exist; create one with "
                         f"'ssh-keygen -t ed25519' or fix the path")
    priv = path_of("ssh_private_key") if data.get("ssh_private_key") else None
    if priv:
        _private(priv, "SSH private key", p)
    ca = path_of("ca_bundle") if data.get("ca_bundle") else None
    if ca and not ca.exists():
        raise UsageError(f"{p}: ca_bundle {ca} does not exist; fix the path or drop the key")
    return Credentials(path=p, cert=cert, key=key, ca_bundle=ca, project=str(data["project"]),
                       user=str(data["user"]), ssh_public_key=pub, ssh_private_key=priv)


@dataclasses.dataclass(frozen=True)
class Request:
    """One reservation request: how many nodes of which kind, where, for how long, and the policy.

    ``wait`` (minutes) bounds how long nodes may take to become ready; ``attempts`` is how often
    the whole sliver is requested before giving up; ``poll`` and ``backoff`` are seconds between
    status polls and the base of the retry backoff on aggregate-manager errors.
    """

    slice_name: str
    nodes: int
    site: str = "utah"
    hardware: str = "m510"
    image: str = DEFAULT_IMAGE
    hours: float = 16.0
    lan: bool = True
    subnet: str = "10.10.1.0/24"
    wait: float = 30.0
    poll: float = 20.0
    attempts: int = 3
    backoff: float = 5.0
    gate: bool = True
    credentials: str | None = None

    def addresses(self) -> list[str]:
        """Private LAN addresses of node1..nodeN, in order (first hosts of ``subnet``)."""
        hosts = ipaddress.ip_network(self.subnet).hosts()
        return [str(next(hosts)) for _ in range(self.nodes)]

    @property
    def netmask(self) -> str:
        return str(ipaddress.ip_network(self.subnet).netmask)


def _coerce(name: str, value, kind):
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
        raise UsageError(f"cloudlab option {name}={value!r}: expected yes or no")
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise UsageError(f"cloudlab option {name}={value!r}: expected a {kind.__name__}") from None


def make_request(*, name: str, nodes: int | None, **options) -> Request:
    """Validate ``options`` (Python values or ``-O`` strings) into a :class:`Request`."""
    known = [f.name for f in dataclasses.fields(Request) if f.name not in ("slice_name", "nodes")]
    unknown = set(options) - set(known)
    if unknown:
        raise UsageError(f"cloudlab provider: unknown option(s) {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(known)})")
    if not name or not _SLICE_NAME.fullmatch(name):
        raise UsageError(f"cloudlab provider: name {name!r} must start with a letter and have at most "
                         f"19 letters, digits or '-' (it becomes the slice name)")
    if nodes is None or int(nodes) < 1:
        raise UsageError("cloudlab provider: give --nodes N (at least 1)")
    types = {"hours": float, "wait": float, "poll": float, "backoff": float, "attempts": int,
             "lan": bool, "gate": bool}
    values = {k: _coerce(k, v, types.get(k, str)) for k, v in options.items() if v is not None}
    req = Request(slice_name=name, nodes=int(nodes), **values)
    if req.site not in SITES:
        raise UsageError(f"cloudlab option site={req.site!r}: known sites are {', '.join(SITES)}")
    if not req.image.startswith("urn:publicid:IDN+"):
        raise UsageError(f"cloudlab option image={req.image!r}: expected an image URN "
                         f"(urn:publicid:IDN+emulab.net+image+PROJECT//NAME)")
    for key in ("hours", "wait", "attempts", "poll", "backoff"):
        if getattr(req, key) < 0 or (getattr(req, key) == 0 and key in ("hours", "wait", "attempts")):
            raise UsageError(f"cloudlab option {key}={getattr(req, key)}: must be positive")
    try:
        net = ipaddress.ip_network(req.subnet)
    except ValueError as e:
        raise UsageError(f"cloudlab option subnet={req.subnet!r}: {e}") from None
    if net.num_addresses - 2 < req.nodes:
        raise UsageError(f"cloudlab option subnet={req.subnet}: too small for {req.nodes} nodes")
    return req
