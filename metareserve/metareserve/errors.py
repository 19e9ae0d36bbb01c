"""The error vocabulary shared by every sae package.

Three families, mapped to exit codes in one place (:func:`metareserve.cli_support.run`):
nothing to do (exit 0), usage errors (exit 2) and operational errors (exit 1).
Errors about work on a node carry the node name and stage and render as
``[node2 ceph-osd start] what failed; what to do``.
"""
from __future__ import annotations


class SaeError(Exception):
    """Base class of every error the toolkit raises on purpose."""

    exit_code = 1


class NothingToDo(SaeError):
    """The requested state already holds; the message says why (exit 0)."""

    exit_code = 0


class UsageError(SaeError):
    """Bad input from the user: a file, an option, a layout (exit 2)."""

    exit_code = 2


class OperationalError(SaeError):
    """Something failed while doing the work (exit 1)."""

    exit_code = 1


def prefix(node: str | None, stage: str | None) -> str:
    """The ``[node stage]`` prefix used by log lines and errors."""
    parts = [p for p in (node, stage) if p]
    return f"[{' '.join(parts)}] " if parts else ""


class RemoteError(OperationalError):
    """A command or function failed on one node.

    Attributes: ``node``, ``stage``, ``command``, ``exit_code_remote``, ``stderr_tail``, ``hint``.
    """

    def __init__(self, node: str, stage: str, what: str, *, command: str | None = None,
                 exit_code: int | None = None, stderr_tail: str = "", hint: str = ""):
        self.node, self.stage, self.command = node, stage, command
        self.exit_code_remote, self.stderr_tail, self.hint = exit_code, stderr_tail, hint
        self.what = what
        super().__init__(self._render())

    def _render(self) -> str:
        text = prefix(self.node, self.stage) + self.what
        last = last_line(self.stderr_tail)
        if last and not text.endswith(last):
            text += f": {last}"
        if self.hint:
            text += f"; {self.hint}"
        return text


class ConnectError(RemoteError):
    """A node could not be reached (resolve, connect, authenticate or no python)."""


class GroupError(OperationalError):
    """One or more nodes failed during a fan-out.

    ``results`` maps node name to the value or the exception, so callers still get
    the good nodes' results; the message lists every failing node.
    """

    def __init__(self, stage: str, results: dict):
        self.stage, self.results = stage, results
        self.failed = {n: r for n, r in results.items() if isinstance(r, BaseException)}
        self.succeeded = {n: r for n, r in results.items() if not isinstance(r, BaseException)}
        lines = [str(e) if isinstance(e, SaeError) else f"{prefix(n, stage)}{type(e).__name__}: {e}"
                 for n, e in sorted(self.failed.items())]
        super().__init__(f"{len(self.failed)} of {len(results)} nodes failed in {stage}: "
                         + " | ".join(lines))


def last_line(text: str | None) -> str:
    """The last non-empty line of ``text``, stripped (empty string if none)."""
    for line in reversed((text or "").splitlines()):
        if line.strip():
            return line.strip()
    return ""
