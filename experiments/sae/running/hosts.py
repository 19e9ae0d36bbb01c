"""Your own SSH hosts (``sae run/plan --hosts FILE``, ``RunOptions(hosts=...)``): the hosts file
the ssh provider reads (``metareserve.providers.ssh.load_hosts_file``), checked against the plan
at plan time, and the roles each host gets, which ``sae plan`` prints (docs/ssh.md)."""
from __future__ import annotations

from metareserve import Layout, Reservation
from metareserve.errors import UsageError
from metareserve.providers.ssh import SshProvider

from ..planning.planner import Plan
from .context import sub_reservation
from .plan_checks import check_reservation


def load(path, name: str = "hosts") -> Reservation:
    """The hosts of ``path`` as an ssh reservation called ``name``, every field checked; nothing
    connects. UsageError naming the file and the field otherwise."""
    return SshProvider().reserve(name=name, hosts_file=path)


def reservation_name(res: Reservation) -> str:
    """The name sae records your hosts under: ``sae-own-`` and a digest of their SSH hosts and
    ports, the same for every experiment on the same hosts (so experiments run one after another,
    ``sae run DIR --hosts``, share the stack deployed there, as on the local cluster, and
    ``sae clean`` stops it)."""
    import hashlib
    key = "\n".join(f"{n.host}:{n.port}" for n in res.nodes)
    return "sae-own-" + hashlib.sha256(key.encode()).hexdigest()[:10]


def check(res: Reservation, p: Plan, source: str) -> None:
    """UsageError if the hosts are fewer than a point's ``cluster.nodes`` (saying how to plan on
    the hosts there are) or a point's layout names a host the file lacks."""
    have = len(res.nodes)
    for point in p.points:
        need = point.spec.cluster.nodes
        if have < need:
            raise UsageError(f"{source}: {have} hosts but point {point.id} needs {need} (cluster.nodes); add hosts, "
                             f"or run on these with --set cluster.nodes={have} (docs/ssh.md: how roles then "
                             f"share hosts)")
    check_reservation(res, p, source)


def layouts(p: Plan, res: Reservation) -> list[tuple[str, int, Layout]]:
    """(stack key, hosts used, layout) of every stack of the plan, in plan order: the point's
    explicit ``cluster.layout`` or ``Layout.default`` of the first ``cluster.nodes`` hosts, as
    the run's distribute stage resolves it."""
    out, seen = [], set()
    for point in p.points:
        if point.stack_key in seen:
            continue
        seen.add(point.stack_key)
        need, roles = point.spec.cluster.nodes, point.spec.cluster.layout
        sub = sub_reservation(res, need)
        layout = Layout.from_dict({"roles": roles}) if roles else Layout.default(sub)
        out.append((point.stack_key, need, layout.validate(sub)))
    return out


def mapping_text(p: Plan, res: Reservation, source: str) -> str:
    """Which roles each host of ``source`` plays, per stack, and the hosts left unused."""
    lines = []
    for key, need, layout in layouts(p, res):
        lines.append(f"hosts ({source}, {len(res.nodes)} hosts; stack {key}: {need} used):")
        sides = layout.host_roles()
        for node in res.nodes[:need]:
            roles = layout.roles_of(node.name)
            side = sides.get(node.name, "neither side")
            lines.append(f"  {node.name} ({node.user}@{node.host}, address {node.cluster_address}): "
                         f"{side}: {', '.join(roles) if roles else 'no role'}")
        if len(res.nodes) > need:
            lines.append(f"  unused: {', '.join(n.name for n in res.nodes[need:])}")
    return "\n".join(lines)


def mapping_dict(p: Plan, res: Reservation) -> dict:
    """The same as data: stack key -> host name -> roles."""
    return {key: {n.name: layout.roles_of(n.name) for n in res.nodes[:need]} for key, need, layout in layouts(p, res)}
