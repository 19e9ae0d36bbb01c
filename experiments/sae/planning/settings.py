"""Settings: an experiment changed without editing its file (``sae run FILE --set
workload.selectivity=5``, ``sae.run(path, set={...})``).

A setting is ``path=value``: ``path`` a section field (``workload.selectivity``, ``monitor.scrape_interval``),
an experiment option (``repetitions``, ``warmup``, ``pause``, ``figures``, ``description``, ``drift``) or a
sweep axis (``sweep.cartesian.selectivity``, ``sweep.zipped.object_size``: its list of values) or an
axis's repetition counts (``sweep.repetitions.selectivity={100: 6}``: {value: repetitions}, ``{}``
none; applied after ``repetitions``, which drops the sweep's counts); ``value`` is read as YAML
(``5``, ``1.5``, ``true``, ``zstd``, ``[1, 10]``, ``{node1: "1"}``).
Settings apply after the profile, so they win over it, and the result is validated like the file:
a bad value is refused in one line naming the setting. A field the sweep varies cannot be set
(the sweep would replace it); set the axis instead.

``NAME:path=value`` scopes a setting to the experiment named ``NAME`` (in a catalogue run,
``sae run experiments/ --set bandwidth:sweep.cartesian.link_rate=[200mbit]``); it wins over an
unscoped setting of the same path, and a scope naming no experiment of the run is refused.
"""
from __future__ import annotations

import dataclasses

import yaml

from metareserve.errors import UsageError
from metareserve.model import AliasExpansion, load_yaml

from .spec import SECTIONS, Experiment, axis_target, validate

OPTIONS = ("repetitions", "warmup", "pause", "figures", "description", "drift")
"""Experiment options a setting may change besides section fields and sweep axes."""
TUPLES = {"workload.columns", "figures"}
COUNTS = "sweep.repetitions."
"""Settings of an axis's repetition counts; applied after every other setting (``repetitions``
drops the sweep's counts, whatever order the settings came in)."""
SCOPE = ":"
"""Separates an experiment's name from the path of a setting scoped to it."""


def parse(settings) -> dict[str, object]:
    """``settings`` (``["path=value", ...]`` or a mapping path → value, values already typed) as
    path → value; UsageError for an item without ``=`` or a value that is not YAML."""
    if settings is None:
        return {}
    if isinstance(settings, dict):
        return dict(settings)
    if isinstance(settings, str):
        settings = [settings]
    out = {}
    for item in settings:
        path, eq, text = str(item).partition("=")
        path = path.strip()
        if not eq or not path:
            raise UsageError(f"--set {item}: give path.to.field=value, e.g. --set workload.selectivity=5")
        try:
            out[path] = load_yaml(text)
        except AliasExpansion as e:
            raise UsageError(f"--set {path}: value refused: {e}") from None
        except yaml.YAMLError as e:
            raise UsageError(f"--set {path}: value {text!r} is not YAML ({str(e).splitlines()[0]}); "
                             f"quote strings, write lists as [1, 10]") from None
    return out


def of_experiment(settings, name: str) -> dict[str, object]:
    """The settings that apply to experiment ``name``: the unscoped ones, then those scoped to it
    (``name:path``) with the scope removed, so they win."""
    settings = parse(settings)
    own = {path: v for path, v in settings.items() if SCOPE not in path}
    own.update({path.partition(SCOPE)[2]: v for path, v in settings.items() if path.partition(SCOPE)[0] == name})
    return own


def check_scopes(settings, names) -> None:
    """UsageError for a setting scoped to an experiment that is not among ``names``."""
    for path in parse(settings):
        scope, colon, rest = path.partition(SCOPE)
        if colon and scope not in names:
            raise UsageError(f"--set {path}: {scope!r} is not an experiment of this run (experiments: "
                             f"{', '.join(sorted(names))}); scope a setting as NAME:path=value")
        if colon and not rest:
            raise UsageError(f"--set {path}: give the path after the experiment's name, as NAME:path=value")


def texts(settings: dict) -> list[str]:
    """The settings as ``path=value`` lines (recorded in a run's spec.yaml; :func:`parse` reads them back)."""
    return [f"{path}={yaml.safe_dump(value, default_flow_style=True).strip().removesuffix('...').strip()}"
            for path, value in settings.items()]


def apply(experiment: Experiment, settings) -> Experiment:
    """``experiment`` with ``settings`` (see the module) applied and validated; UsageError naming
    the setting (``--set path``) for an unknown path, a field the sweep varies or a bad value."""
    settings = of_experiment(settings, experiment.name)
    if not settings:
        return experiment
    changed = experiment
    for path, value in sorted(settings.items(), key=lambda kv: kv[0].startswith(COUNTS)):
        changed = _apply_one(changed, path, value)
    try:
        validate(changed)
    except UsageError as whole:
        for path, value in settings.items():   # name the setting that breaks it on its own
            try:
                validate(_apply_one(experiment, path, value))
            except UsageError as e:
                raise UsageError(f"--set {path}={_text(value)}: {e}") from None
        raise UsageError(f"--set {', '.join(settings)} together: {whole}") from None
    return changed


def _text(value) -> str:
    return texts({"": value})[0][1:]


def _apply_one(experiment: Experiment, path: str, value) -> Experiment:
    where = f"--set {path}"
    head, _, rest = path.partition(".")
    if path in TUPLES and isinstance(value, list):
        value = tuple(value)
    if head == "sweep":
        kind, _, axis = rest.partition(".")
        if kind == "repetitions" and axis:
            return _counts(experiment, axis, value, where)
        if kind not in ("cartesian", "zipped") or not axis:
            raise UsageError(f"{where}: set a sweep axis as sweep.cartesian.AXIS or sweep.zipped.AXIS "
                             f"(a list of values), or its counts as sweep.repetitions.AXIS ({{value: repetitions}})")
        try:
            axis_target(axis)
        except UsageError as e:
            raise UsageError(f"{where}: {e}") from None
        if not isinstance(value, list) or not value:
            raise UsageError(f"{where}: give the axis a non-empty list of values, e.g. [1, 10]")
        sweep = experiment.sweep
        axes = {k: v for k, v in {**sweep.cartesian, **sweep.zipped}.items()}
        clash = [a for a in axes if a != axis and axis_target(a) == axis_target(axis)]
        if clash:
            raise UsageError(f"{where}: the sweep already varies that field as {clash[0]!r}; set "
                             f"sweep.{kind}.{clash[0]}")
        table = dict(getattr(sweep, kind), **{axis: value})
        counts = {a: t if a != axis else {v: n for v, n in t.items() if v in value}   # a value kept keeps its count
                  for a, t in sweep.repetitions.items()}
        counts = {a: t for a, t in counts.items() if t}
        return dataclasses.replace(experiment, sweep=dataclasses.replace(sweep, **{kind: table},
                                                                         repetitions=counts))
    if head in SECTIONS and rest:
        fields = {f.name for f in dataclasses.fields(SECTIONS[head])} - {"offload"}
        if rest not in fields:
            raise UsageError(f"{where}: unknown field {rest!r} of {head} (fields: {', '.join(sorted(fields))})")
        swept = [a for a in {**experiment.sweep.cartesian, **experiment.sweep.zipped}
                 if _target(a) == (head, rest)]
        if swept:
            kind = "cartesian" if swept[0] in experiment.sweep.cartesian else "zipped"
            raise UsageError(f"{where}: the sweep varies {swept[0]!r}, which would replace this value; set "
                             f"the axis instead, e.g. --set sweep.{kind}.{swept[0]}=[{_text(value)}]")
        section = dataclasses.replace(getattr(experiment, head), **{rest: value})
        return dataclasses.replace(experiment, **{head: section})
    if path in OPTIONS:
        if path == "repetitions":   # every point this many times: the sweep's per-point counts go
            experiment = dataclasses.replace(experiment, sweep=dataclasses.replace(experiment.sweep, repetitions={}))
        return dataclasses.replace(experiment, **{path: value})
    known = [*OPTIONS, *(f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in dataclasses.fields(cls)
                         if f.name != "offload"), "sweep.cartesian.AXIS", "sweep.zipped.AXIS", f"{COUNTS}AXIS"]
    raise UsageError(f"{where}: unknown path (paths: {', '.join(known)})")


def _counts(experiment: Experiment, axis: str, value, where: str) -> Experiment:
    """``experiment`` with the sweep's repetition counts of ``axis`` replaced by ``value``
    ({value of the axis: repetitions}; ``{}`` removes them); the counts are checked with the plan."""
    if not isinstance(value, dict):
        raise UsageError(f"{where}: give {{value: repetitions}}, e.g. --set '{where.removeprefix('--set ')}={{1: 3}}'")
    counts = {a: t for a, t in experiment.sweep.repetitions.items() if a != axis}
    if value:
        counts[axis] = value
    return dataclasses.replace(experiment, sweep=dataclasses.replace(experiment.sweep, repetitions=counts))


def _target(axis: str):
    try:
        return axis_target(axis)
    except UsageError:
        return None

