"""What every node-side deploy backend shares (stdlib only, shipped with :mod:`data_deploy.remote`):
the one-line node-side error, the copy chunk, the hint for a full store."""
import errno

CHUNK = 16 << 20
"""Bytes copied at a time."""

sae_emit = print  # on nodes, the dispatcher rebinds it to stream lines to the controller


class DeployError(RuntimeError):
    """A node-side failure whose message is already one line saying what to do."""


def space_hint(e):
    """The advice a write error's message ends with when the store is full (else nothing)."""
    if getattr(e, "errno", None) == errno.ENOSPC or type(e).__name__ in ("NoSpace", "DiskQuotaExceeded"):
        return "; the storage is full: free space, lower the multipliers or use a smaller dataset"
    return ""
