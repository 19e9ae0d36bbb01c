"""Parallel commands, Python functions and file transfer over the nodes of a reservation."""
from __future__ import annotations

import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

from ..errors import GroupError, RemoteError, UsageError
from ..log import node_log, progress
from ..model import Node, Reservation
from . import node_agent
from .connection import NodeConnection, ssh_argv

DEFAULT_TIMEOUT = 900.0


class Results(dict):
    """Node name → result (or exception), with ``succeeded`` and ``failed`` views."""

    @property
    def failed(self) -> dict:
        return {n: r for n, r in self.items() if isinstance(r, BaseException)}

    @property
    def succeeded(self) -> dict:
        return {n: r for n, r in self.items() if not isinstance(r, BaseException)}


class Cluster:
    """Remote execution over a reservation's nodes. Connections are opened lazily and reused.

    Every fan-out runs on all selected nodes in parallel, collects every node's outcome and,
    when ``check`` is true, raises one :class:`GroupError` listing every failing node.
    """

    def __init__(self, reservation: Reservation, *, max_workers: int = 32):
        self.reservation = reservation
        self.max_workers = max_workers
        self._conns: dict[str, NodeConnection] = {}

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close every open connection."""
        for c in self._conns.values():
            c.close()
        self._conns.clear()

    def over(self, reservation: Reservation) -> "Cluster":
        """This cluster's connections, fanning out over ``reservation``'s nodes by default (a part
        of this one's, e.g. a point on fewer hosts than were reserved); closing it closes them."""
        if reservation.nodes == self.reservation.nodes:
            return self
        unknown = {n.name for n in reservation.nodes} - {n.name for n in self.reservation.nodes}
        if unknown:
            raise UsageError(f"nodes {', '.join(sorted(unknown))} are not in reservation {self.reservation.name!r}")
        part = Cluster(reservation, max_workers=self.max_workers)
        part._conns = self._conns
        return part

    def select(self, nodes: Iterable[Node | str] | None = None) -> list[Node]:
        """Nodes by name or object (all nodes if ``None``)."""
        if nodes is None:
            return list(self.reservation.nodes)
        return [n if isinstance(n, Node) else self.reservation.node(n) for n in nodes]

    def connection(self, node: Node) -> NodeConnection:
        if node.name not in self._conns:
            self._conns[node.name] = NodeConnection(self.reservation, node)
        return self._conns[node.name]

    def each(self, fn: Callable[[Node], object], *, nodes=None, stage: str, check: bool = True) -> Results:
        """Run ``fn(node)`` on the controller for every node in parallel; collect every outcome."""
        selected = self.select(nodes)
        results = Results()
        if not selected:
            return results
        with progress(stage, len(selected)) as advance, \
                ThreadPoolExecutor(max_workers=min(self.max_workers, len(selected))) as pool:
            futures = {pool.submit(fn, n): n for n in selected}
            for fut, n in futures.items():
                try:
                    results[n.name] = fut.result()
                except Exception as e:  # collected, raised once below
                    results[n.name] = e
                advance()
        if check and results.failed:
            if len(results) == 1:
                raise next(iter(results.failed.values()))
            raise GroupError(stage, results)
        return results

    def call(self, module, fn: str, *args, nodes=None, stage: str, timeout: float | None = DEFAULT_TIMEOUT,
             per_node: Callable[[Node], dict] | None = None, check: bool = True, **kwargs) -> Results:
        """Call ``module.fn`` on each node (``module`` is self-contained, stdlib-only source).

        ``per_node(node)`` may add keyword arguments for each node. Lines the function sends with
        ``sae_emit`` are logged with the node and stage prefix.
        """
        def one(node: Node):
            kw = dict(kwargs, **(per_node(node) if per_node else {}))
            return self.connection(node).call(
                module, fn, args, kw, stage=stage, timeout=timeout,
                on_log=lambda line: node_log(node.name, stage, line))
        return self.each(one, nodes=nodes, stage=stage, check=check)

    def run(self, argv, *, nodes=None, stage: str, env: dict | None = None, cwd: str | None = None,
            timeout: float | None = DEFAULT_TIMEOUT, check: bool = True, stream: bool = False,
            input: str | None = None, hint: str = "") -> Results:
        """Run a command (argv list, or a shell string) on each node.

        Each result is ``{rc, stdout, stderr, seconds}``. With ``check``, a non-zero exit is a
        RemoteError naming node, stage, command and the tail of stderr.
        """
        shell = isinstance(argv, str)
        text = argv if shell else shlex.join(argv)

        def one(node: Node):
            res = self.connection(node).call(
                node_agent, "run", (argv,), dict(env=env, cwd=cwd, timeout=timeout, input=input,
                                                 stream=stream, shell=shell),
                stage=stage, timeout=None if timeout is None else timeout + 30,
                on_log=lambda line: node_log(node.name, stage, line))
            if check and res["rc"] != 0:
                raise RemoteError(node.name, stage, f"'{_short(text)}' exited {res['rc']}",
                                  command=text, exit_code=res["rc"],
                                  stderr_tail=res["stderr"][-4000:] or res["stdout"][-4000:], hint=hint)
            return res
        return self.each(one, nodes=nodes, stage=stage, check=check)

    def apt_install(self, packages: Iterable[str] = (), *, nodes=None, stage: str,
                    per_node: Callable[[Node], list[str]] | None = None) -> Results:
        """Install Debian packages for each selected node: ``packages``, or ``per_node(node)``.

        Nodes that share the controller's package database (a local reservation) get one
        install on the controller, which reaches the mirrors; other nodes install their own.
        Each result is ``{"installed": [...], "already": [...]}`` for that node's packages.
        """
        wanted = {n.name: list(per_node(n) if per_node else packages) for n in self.select(nodes)}
        if not self.reservation.shares_controller_packages:
            return self.call(node_agent, "apt_install", nodes=list(wanted), stage=stage,
                             per_node=lambda n: {"packages": wanted[n.name]})
        union = list(dict.fromkeys(p for ps in wanted.values() for p in ps))
        missing = set(node_agent.missing_packages(union))
        if missing:
            node_log(None, stage, f"installing {' '.join(sorted(missing))} on the controller "
                                  f"for {', '.join(wanted)} (they share its package database)")
            try:
                node_agent.apt_install(union)
            except RuntimeError as e:
                raise RemoteError(",".join(wanted), stage, f"{e} (installed on the controller, whose "
                                  "package database these hosts share)",
                                  hint="check the package names and that this machine reaches its "
                                       "Debian mirrors ('apt-get update')") from None
        return Results({name: {"installed": [p for p in ps if p in missing],
                               "already": [p for p in ps if p not in missing]}
                        for name, ps in wanted.items()})

    def put(self, src: str, dst: str, *, nodes=None, stage: str, check: bool = True) -> Results:
        """Copy a local file or directory to ``dst`` on each node (rsync; unchanged files are skipped)."""
        return self.each(lambda n: self._rsync(n, src, f"{_target(n)}:{dst}", stage),
                         nodes=nodes, stage=stage, check=check)

    def get(self, src: str, dst_dir: str, *, nodes=None, stage: str, check: bool = True) -> Results:
        """Copy ``src`` from each node into ``dst_dir/<node name>/`` locally."""
        import os

        def one(n: Node):
            os.makedirs(os.path.join(dst_dir, n.name), exist_ok=True)
            return self._rsync(n, f"{_target(n)}:{src}", os.path.join(dst_dir, n.name) + "/", stage)
        return self.each(one, nodes=nodes, stage=stage, check=check)

    def _rsync(self, node: Node, src: str, dst: str, stage: str) -> dict:
        ssh = shlex.join(["ssh", *ssh_argv(self.reservation, node)])
        argv = ["rsync", "-a", "--mkpath", "--stats", "-e", ssh, src, dst]
        r = subprocess.run(argv, capture_output=True, text=True)
        res = {"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr}
        if r.returncode != 0:
            raise RemoteError(node.name, stage, f"copy {src} -> {dst} failed (rsync exit {r.returncode})",
                              command=shlex.join(argv), exit_code=r.returncode, stderr_tail=r.stderr,
                              hint="is rsync installed on the node and the path writable?")
        return res

    def write(self, path: str, text: str, *, nodes=None, stage: str, mode: int = 0o644,
              per_node: Callable[[Node], dict] | None = None) -> Results:
        """Write a small text file on each node; result is True where the content changed."""
        return self.call(node_agent, "write_file", path, nodes=nodes, stage=stage, mode=mode,
                         text=text, per_node=per_node)


def _target(node: Node) -> str:
    return node.host


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
