"""A plan held against the hosts it will run on: enough of them, and layouts that name only them."""
from __future__ import annotations

from metareserve import Layout, Reservation
from metareserve.errors import UsageError

from ..planning.planner import Plan
from .context import sub_reservation


def check_reservation(res: Reservation, p: Plan, source: str) -> None:
    """UsageError if ``res`` is too small for any point or a point's layout names unknown nodes."""
    for point in p.points:
        need = point.spec.cluster.nodes
        if len(res.nodes) < need:
            raise UsageError(f"{source}: reservation {res.name!r} has {len(res.nodes)} nodes but point "
                             f"{point.id} needs {need} (cluster.nodes); reserve more nodes or lower cluster.nodes")
        roles = point.spec.cluster.layout
        if roles:
            try:
                Layout.from_dict({"roles": roles}).validate(sub_reservation(res, need))
            except UsageError as e:
                raise UsageError(f"{source}: point {point.id}: {e}") from None


def check_own_node_names(p: Plan, source: str) -> None:
    """UsageError if a point's layout names a node outside node1..nodeN, the names of the
    reservations sae makes itself (hosts named otherwise come with ``--reservation``)."""
    for point in p.points:
        need, roles = point.spec.cluster.nodes, point.spec.cluster.layout or {}
        own = {f"node{i}" for i in range(1, need + 1)}
        for role, names in roles.items():
            for n in [names] if isinstance(names, str) else names:
                if n not in own:
                    raise UsageError(f"{source}: point {point.id}: cluster.layout role {role} names {n!r}, not "
                                     f"one of node1..node{need}; for hosts named otherwise pass --reservation")
