"""Case files for the pure stage layer (``cases/plan/*.yaml``, one case per file): an experiment
as data → the plan's points and stage steps, or the one-line UsageError ``sae plan`` gives; with
``reservation`` also the checks ``sae run`` makes against a given reservation (a list of host
names) or against the node1..nodeN it reserves itself (``own``), and with ``provider`` the host
capacities as ``sae run`` checks them for that provider. No nodes are touched."""
from pathlib import Path

import pytest
import yaml

from metareserve import Node, Reservation
from metareserve.errors import UsageError
from sae.planning.capacities import check_plan
from sae.planning.planner import plan
from sae.planning.spec import SECTIONS, Experiment, Sweep
from sae.running.plan_checks import check_own_node_names, check_reservation

CASES = sorted((Path(__file__).parent / "cases" / "plan").glob("*.yaml"))


def experiment(data: dict) -> Experiment:
    sections = {s: SECTIONS[s](**v) for s, v in (data.get("sections") or {}).items()}
    return Experiment(name="t", sweep=Sweep(**data.get("sweep", {})), repetitions=2, warmup=1, **sections,
                      **{k: data[k] for k in ("pause",) if k in data})


def outcome(case: dict):
    """The plan of the case, checked as ``sae run`` would check it."""
    p = plan(experiment(case["experiment"]), teardown=case.get("teardown", False))
    hosts = case.get("reservation")
    if hosts == "own":
        check_own_node_names(p, "experiment")
    elif hosts:
        res = Reservation(name="given", provider="ssh", nodes=[Node(name=h, host=f"10.0.0.{i}")
                                                                for i, h in enumerate(hosts, 1)])
        check_reservation(res, p, "given.yaml")
    if case.get("provider"):
        check_plan(p.points, case["provider"], "experiment")
    return p


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_plan_case(path):
    case = yaml.safe_load(path.read_text())
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(UsageError) as e:
            outcome(case)
        assert expect["error"] in str(e.value) and "\n" not in str(e.value), str(e.value)
        return
    p = outcome(case)
    assert len(p.points) == expect["points"]
    assert [s.stage for s in p.steps] == expect["steps"], p.text()


def test_every_case_says_what_it_proves():
    assert len(CASES) >= 10
    for path in CASES:
        assert path.read_text().startswith("# "), f"{path.name}: start with a comment saying what it proves"
