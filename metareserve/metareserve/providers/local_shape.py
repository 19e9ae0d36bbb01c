"""Enforcing a local host's declared link rate: ``tc tbf`` on both ends of its link (the
bridge-side veth shapes what the host receives, its ``eth0`` what it sends). It reads what is in
force first and changes only what differs, returning whether it changed anything. Cores, quota
and memory are :mod:`metareserve.providers.cgroups`'s.
"""
from __future__ import annotations

import json
import subprocess

from ..capacity import format_rate
from ..errors import OperationalError

TBF_LATENCY = "50ms"           # queue a shaped link holds before it drops


def _tc(*argv: str, netns: str | None = None) -> subprocess.CompletedProcess:
    prefix = ["tc", "-n", netns] if netns else ["tc"]
    return subprocess.run([*prefix, *argv], capture_output=True, text=True)


def _root_rate(dev: str, netns: str | None) -> int | None:
    """The rate (bits/s) of the tbf at the root of ``dev``; None if there is none."""
    r = _tc("-j", "qdisc", "show", "dev", dev, netns=netns)
    try:
        qdiscs = json.loads(r.stdout or "[]")
    except ValueError:
        return None
    return next((q["options"]["rate"] * 8 for q in qdiscs if q.get("root") and q.get("kind") == "tbf"), None)


def burst_bytes(rate: int) -> int:
    """A token bucket of 10 ms at ``rate``, and never below 64 KiB (a veth's offloaded segments)."""
    return max(rate // 8 // 100, 64 << 10)


def apply_link(node: str, netns: str, veth: str, rate: int | None) -> bool:
    """Shape both directions of the host's link to ``rate`` bits/s (None: remove the shaping)."""
    changed = False
    for dev, ns in ((veth, None), ("eth0", netns)):
        current = _root_rate(dev, ns)
        if current is None and rate is None or None not in (current, rate) and abs(current - rate) < 64:
            continue     # the kernel keeps rates in bytes/s: a rate not divisible by 8 reads back rounded
        if rate is None:
            r = _tc("qdisc", "del", "dev", dev, "root", netns=ns)
        else:
            r = _tc("qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{int(rate)}bit",
                    "burst", str(burst_bytes(rate)), "latency", TBF_LATENCY, netns=ns)
        if r.returncode != 0:
            raise OperationalError(f"[{node} local shape] tc on {dev} ({format_rate(rate)}) failed: "
                                   f"{r.stderr.strip()}")
        changed = True
    return changed
