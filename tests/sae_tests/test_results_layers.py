"""Pure: the results package's groups import one way, run ← analysis ← drawing: a run's own state
(sae.results.run) imports neither analysis nor drawing, analysis never drawing; read from every
import statement of every module, those inside functions too."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sae.results

RESULTS = Path(sae.results.__file__).parent
BELOW = {"run": (), "analysis": ("run",), "drawing": ("run", "analysis")}
"""Each group → the groups it may import."""


def imported(path: Path) -> set[str]:
    """The modules ``path`` imports, as absolute dotted names."""
    package = ["sae", "results", *path.relative_to(RESULTS).parent.parts]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            out |= {module} if node.module else {f"{module}.{a.name}" for a in node.names}
    return out


@pytest.mark.parametrize("group", sorted(BELOW))
def test_a_group_imports_only_the_groups_below_it(group):
    above = [g for g in BELOW if g != group and g not in BELOW[group]]
    wrong = [f"{path.relative_to(RESULTS)}: {name}" for path in sorted((RESULTS / group).glob("*.py"))
             for name in sorted(imported(path)) if any(name.startswith(f"sae.results.{g}") for g in above)]
    assert not wrong
