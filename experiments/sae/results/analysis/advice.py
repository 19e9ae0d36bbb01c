"""Should this query be pushed down? (``sae advise``): the cost model of :mod:`.cost_model`,
fitted on earlier runs, checked on runs it was not fitted on (the fastest reader picked, the
crossover selectivity, each point's time), asked for a configuration or a cluster of another
size, and the crossover line of a run's report.
"""
from __future__ import annotations

import dataclasses
import math

import pandas as pd

from metareserve import Rate, Size
from metareserve.errors import UsageError

from . import statistics
from .statistics import fixed_width
from .cost_model import (BASES, PARAMS, SUBJECTS, TENANT, Config, Crossover, Model, Prediction, config_of, crossing,
                         fit, observations)
from .measured import shown, varying

CROSSOVER_POINTS = 10.0
"""A predicted crossover within this many selectivity points of the measured one agrees."""
DEFAULT_SELECTIVITIES = (1.0, 10.0, 50.0, 100.0)
TRUSTED_ERROR = 0.2
"""The report shows the model's crossover only where the model, fitted on the run, reproduces the
run's own points within this median |time error|."""


VOLUMES = {"compute_cpu_s": "compute CPU-s", "storage_cpu_s": "storage CPU-s",
           "compute_rx_bytes": "bytes to the compute side"}
"""What validation checks beside the time: each side's CPU-seconds (Prediction's) and the bytes
the compute side received (against the bytes the model sends over the link)."""


@dataclasses.dataclass(frozen=True)
class Estimate:
    """One of :data:`VOLUMES` at one point: the measured median and the predicted value."""

    measure: str
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        """(predicted - measured) / measured; NaN where nothing was measured."""
        m = self.measured
        return (self.predicted - m) / m if m and not math.isnan(m) else math.nan


@dataclasses.dataclass(frozen=True)
class PointCheck:
    """One measured point against the model: its ``label``, reader, measured median time over
    ``n`` repetitions and the predicted time, and its :data:`VOLUMES` (``volumes``)."""

    label: str
    reader: str
    measured_s: float
    predicted_s: float
    n: int
    volumes: tuple[Estimate, ...] = ()

    @property
    def error(self) -> float:
        """(predicted - measured) / measured."""
        return (self.predicted_s - self.measured_s) / self.measured_s


@dataclasses.dataclass(frozen=True)
class PickCheck:
    """At one configuration measured with several readers: the fastest measured and predicted,
    and the runner-up's measured time over the fastest's (with its interval where there are
    enough repetitions); ``right`` when the model picked the fastest, or the measured difference
    is within its interval (``same``)."""

    label: str
    measured: str
    predicted: str
    margin: statistics.Interval

    @property
    def right(self) -> bool:
        return self.measured == self.predicted or statistics.verdict(self.margin, within=0.0) == "same"


@dataclasses.dataclass(frozen=True)
class CrossoverCheck:
    """At one configuration measured over several selectivities: the measured and the predicted
    crossover (both interpolated between the measured selectivities) and the model's own curve's."""

    label: str
    measured: Crossover
    predicted: Crossover
    curve: Crossover

    @property
    def distance(self) -> float:
        """Selectivity points between them (NaN when either is unknown)."""
        return abs(self.measured.edge() - self.predicted.edge())

    @property
    def agrees(self) -> bool:
        return self.distance <= CROSSOVER_POINTS


@dataclasses.dataclass(frozen=True)
class Validation:
    """The model (fitted on ``model.runs``) predicting the runs ``runs`` it has not seen."""

    model: Model
    runs: tuple[str, ...]
    points: tuple[PointCheck, ...]
    picks: tuple[PickCheck, ...]
    crossovers: tuple[CrossoverCheck, ...]
    left_out: tuple[str, ...] = ()

    @property
    def median_error(self) -> float:
        """Median of the points' absolute relative time errors."""
        return float(pd.Series([abs(p.error) for p in self.points], dtype=float).median())

    def volume_errors(self) -> dict[str, tuple[float, int]]:
        """Per measure of :data:`VOLUMES`: the median absolute relative error over the points that
        measured it, and how many did."""
        out = {}
        for measure in VOLUMES:
            errors = pd.Series([abs(e.error) for p in self.points for e in p.volumes if e.measure == measure],
                               dtype=float).dropna()
            out[measure] = (float(errors.median()) if len(errors) else math.nan, len(errors))
        return out

    def text(self) -> str:
        known = [c for c in self.crossovers if not math.isnan(c.distance)]
        rows = [[p.label, p.reader, f"{p.measured_s:.2f} ({p.n})", f"{p.predicted_s:.2f}", f"{p.error:+.0%}"]
                for p in self.points]
        return "\n".join([
            f"validated on {', '.join(self.runs)} (not fitted on)", *(f"left out: {x}" for x in self.left_out),
            *fixed_width(["point", "reader", "measured s (n)", "predicted s", "error"], rows),
            *(f"fastest at {c.label}: measured {c.measured} (runner-up {c.margin.text()} its time), predicted "
              f"{c.predicted}: {'right' if c.right else 'wrong'}" for c in self.picks),
            *(f"crossover at {c.label}: measured: {c.measured.text()}; predicted: {c.predicted.text()}"
              + ("" if math.isnan(c.distance) else f" ({c.distance:.1f} points apart)")
              + f"; the model's curve: {c.curve.text()}" for c in self.crossovers),
            f"validation: median |time error| {self.median_error:.0%} over {len(self.points)} points; fastest "
            f"reader picked at {sum(c.right for c in self.picks)} of {len(self.picks)} configurations; crossover "
            f"within {CROSSOVER_POINTS:g} points at {sum(c.agrees for c in known)} of {len(known)} "
            f"configurations where it was measured",
            "validation of volumes: median |error| " + ", ".join(
                f"{VOLUMES[m]} {e:.0%} over {n} points" if n else f"{VOLUMES[m]} not measured"
                for m, (e, n) in self.volume_errors().items())])


def labels(data: pd.DataFrame, keys) -> pd.Series:
    """Each observation's configuration as ``key=value`` over the ``keys`` that vary (``all``)."""
    keys = varying(data, keys)
    return pd.Series([", ".join(f"{k}={shown(k, row[k])}" for k in keys) or "all" for _, row in data.iterrows()],
                     index=data.index, dtype=object)


def validate(model: Model, paths) -> Validation:
    """The model's predictions of the run directories ``paths``: per point, the fastest reader per
    configuration and the crossover per configuration less the selectivity."""
    paths = list(paths)
    data, left = observations(paths)
    return validate_observations(model, data, left, f"--validate-on {', '.join(map(str, paths))}")


def validate_observations(model: Model, data: pd.DataFrame, left=(), where: str = "validation") -> Validation:
    """:func:`validate` on per-point observations (cost_model's ``observations`` frame, e.g. some
    of a run's points); UsageError naming ``where`` when none is of a fitted reader."""
    data = data[data["reader"].isin(model.readers)] if not data.empty else data
    if data.empty:
        raise UsageError(f"{where}: no point of a fitted reader ({', '.join(model.readers)}) to predict")
    configs = [config_of(row) for _, row in data.iterrows()]
    predictions = [model.predict(r, c) for r, c in zip(data["reader"], configs)]
    data = data.assign(predicted=[p.time_s for p in predictions], config=configs)
    scope = [c for c in PARAMS if c not in ("reader", "storage_hosts", "compute_hosts")]
    data = data.assign(point_label=labels(data, ["run", *scope]),
                       group=labels(data, ["run", *(c for c in scope if c != "selectivity")]))
    points = tuple(PointCheck(row["point_label"], row["reader"], float(row["total_s"]), float(row["predicted"]),
                              int(row["n"]), estimates(row, p)) for (_, row), p in zip(data.iterrows(), predictions))
    return Validation(model, tuple(dict.fromkeys(data["run"])), points, picks(data), crossovers(model, data),
                      tuple(left))


def estimates(row, prediction: Prediction) -> tuple[Estimate, ...]:
    """The :data:`VOLUMES` of one observed point (NaN where its run did not measure one) beside
    the model's."""
    predicted = {"compute_cpu_s": prediction.compute_cpu_s, "storage_cpu_s": prediction.storage_cpu_s,
                 "compute_rx_bytes": prediction.wire_bytes}
    return tuple(Estimate(m, float(row[m]) if m in row and pd.notna(row[m]) else math.nan, predicted[m])
                 for m in VOLUMES)


def picks(data: pd.DataFrame) -> tuple[PickCheck, ...]:
    """A :class:`PickCheck` per configuration measured with two or more readers."""
    out = []
    for label, g in data.groupby("point_label", sort=False):
        if g["reader"].nunique() < 2:
            continue
        ranked = g.sort_values("total_s")
        fastest, second = ranked.iloc[0], ranked.iloc[1]
        margin = statistics.ratio_of_medians(second["times"], fastest["times"])
        out.append(PickCheck(label, fastest["reader"], g.loc[g["predicted"].idxmin(), "reader"], margin))
    return tuple(out)


def crossovers(model: Model, data: pd.DataFrame) -> tuple[CrossoverCheck, ...]:
    """A :class:`CrossoverCheck` per configuration (less the selectivity) with an offloading reader
    and a baseline: the measured medians' crossover and the predicted times', both interpolated
    between the selectivities measured (so they differ by the model's error alone), and the
    model's curve's over the same span."""
    out = []
    for label, g in data.groupby("group", sort=False):
        measured = crossover_of(g, "total_s")
        if measured.subject:
            span = (measured.low, measured.high) if measured.verdict != "unknown" else (1.0, 100.0)
            curve = model.crossover(g["config"].iloc[0], list(g["reader"].unique()), *span)
            out.append(CrossoverCheck(label, measured, crossover_of(g, "predicted"), curve))
    return tuple(out)


def crossover_of(g: pd.DataFrame, value: str) -> Crossover:
    """The crossover of one configuration's ``value`` (``total_s`` or ``predicted``) per reader and
    selectivity: the first offloading reader against the fastest baseline at each selectivity
    where both were measured."""
    times = g.pivot_table(index="selectivity", columns="reader", values=value, aggfunc="median")
    subject = next((r for r in SUBJECTS if r in times), None)
    bases = [r for r in BASES if r in times]
    if not subject or not bases:
        return Crossover("unknown", why="needs an offloading reader and a baseline")
    both = times[times[subject].notna() & times[bases].notna().any(axis=1)].sort_index()
    return crossing(both.index, both[subject] - both[bases].min(axis=1), subject)


# ---- advice: predictions for a configuration, the crossover, the validation

CLUSTERS = {"thesis": {"storage_cores": 64.0, "compute_cores": 64.0, "storage_hosts": 8, "compute_hosts": 8,
                       "link_rate": "80gbit", "data": "512GiB", "object_size": "64MiB", "shared_cores": False}}
"""What-if clusters: the thesis's (8 storage and 8 compute m510 hosts of 8 cores, each host on
10 GbE: 80 Gbit/s between the sides; 512 GiB scanned per query in 64 MiB objects)."""


@dataclasses.dataclass(frozen=True)
class Advice:
    """The fitted model, the configuration asked about, each reader's :class:`Prediction` per
    selectivity, the :class:`Crossover` and, when asked, the :class:`Validation`."""

    model: Model
    config: Config
    predictions: tuple[Prediction, ...]
    crossover: Crossover
    validation: Validation | None = None

    def text(self) -> str:
        rows = [[f"{p.config.selectivity:g}", p.reader, f"{p.time_s:.2f}", f"{p.cpu_s:.2f}", f"{p.transfer_s:.2f}",
                 p.bound, f"{p.wire_bytes / 1e6:.1f}", f"{p.storage_cpu_s:.2f}", f"{p.compute_cpu_s:.2f}"]
                for p in self.predictions]
        return "\n".join([self.model.text(), f"predicted for {self.config.text()}:",
                          *fixed_width(["sel %", "reader", "time s", "cpu s", "transfer s", "bound", "link MB",
                                        "storage CPU-s", "compute CPU-s"], rows),
                          f"crossover: {self.crossover.text()}",
                          *([self.validation.text()] if self.validation else [])])

    def to_dict(self) -> dict:
        """Plain data (``--json``; numbers that are not finite, such as an unlimited link, as None)."""
        plain = lambda x: dataclasses.asdict(x) if dataclasses.is_dataclass(x) else x  # noqa: E731
        out = {"runs": list(self.model.runs), "points": self.model.points, "left_out": list(self.model.left_out),
               "shape": plain(self.model.shape),
               "constants": [plain(c) for c in self.model.constants],
               "config": {k: v for k, v in plain(self.config).items() if k != "selectivity"},
               "predictions": [{k: v for k, v in plain(p).items() if k != "config"} | {
                   "selectivity": p.config.selectivity, "bound": p.bound} for p in self.predictions],
               "crossover": plain(self.crossover)}
        if self.validation:
            v = self.validation
            out["validation"] = {"runs": list(v.runs), "median_error": v.median_error,
                                 "volume_errors": {m: {"median_error": e, "points": n}
                                                   for m, (e, n) in v.volume_errors().items()},
                                 "points": [plain(p) | {"error": p.error} for p in v.points],
                                 "picks": [{"label": c.label, "measured": c.measured, "predicted": c.predicted,
                                            "right": c.right} for c in v.picks],
                                 "crossovers": [{"label": c.label, "measured": plain(c.measured),
                                                 "predicted": plain(c.predicted), "distance": c.distance,
                                                 "agrees": c.agrees} for c in v.crossovers]}
        return finite(out)


def finite(value):
    """``value`` with every float that is not finite (NaN, infinity) replaced by None, recursively."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return None if isinstance(value, float) and not math.isfinite(value) else value


def positive(value, option: str) -> float:
    """``value`` as a finite number above 0; UsageError naming ``option`` otherwise."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise UsageError(f"{option} {value}: give a finite number above 0")
    return number


def whole_number(value, option: str) -> int:
    """``value`` as a whole number of 1 or more; UsageError naming ``option`` otherwise."""
    number = positive(value, option)
    if number != int(number):
        raise UsageError(f"{option} {value}: give a whole number of 1 or more")
    return int(number)


def asked(model: Model, *, cluster=None, object_size=None, rows=None, data=None, link_rate=None,
          storage_cores=None, compute_cores=None, storage_hosts=None, compute_hosts=None, compression=None,
          shared_cores=None) -> Config:
    """The configuration asked about: the fitted runs' first point, then the ``cluster``
    preset (:data:`CLUSTERS`), then each option given; UsageError naming a bad option."""
    if cluster is not None and cluster not in CLUSTERS:
        raise UsageError(f"--cluster {cluster}: not one of {', '.join(CLUSTERS)}")
    given = {**CLUSTERS.get(cluster, {}), **{k: v for k, v in dict(
        object_size=object_size, rows=rows, data=data, link_rate=link_rate, storage_cores=storage_cores,
        compute_cores=compute_cores, storage_hosts=storage_hosts, compute_hosts=compute_hosts,
        compression=compression, shared_cores=shared_cores).items() if v is not None}}
    if rows is not None and data is not None:
        raise UsageError("--rows and --data both given: give the rows scanned per query or their stored size")
    config = dataclasses.replace(model.reference, links=1)
    if "object_size" in given:
        config = dataclasses.replace(config, object_size=int(Size.parse(given["object_size"], what="--object-size")))
    if "rows" in given:
        config = dataclasses.replace(config, rows=positive(given["rows"], "--rows"))
    elif "data" in given:
        config = dataclasses.replace(config, rows=int(Size.parse(given["data"], what="--data"))
                                     / model.shape.stored_bytes_per_row)
    if "link_rate" in given:
        rate = Rate.parse(given["link_rate"], what="--link-rate")
        config = dataclasses.replace(config, link_bps=math.inf if rate is None else float(int(rate)))
    for name in ("storage_cores", "compute_cores"):
        if name in given:
            config = dataclasses.replace(config, **{name: positive(given[name], f"--{name.replace('_', '-')}")})
    for name in ("storage_hosts", "compute_hosts"):
        if name in given:
            config = dataclasses.replace(config, **{name: whole_number(given[name], f"--{name.replace('_', '-')}")})
    if "compression" in given:
        model.shape.reply(given["compression"])
        config = dataclasses.replace(config, compression=given["compression"])
    if "shared_cores" in given:
        config = dataclasses.replace(config, shared_cores=bool(given["shared_cores"]))
    return config


def advise(runs, *, validate_on=(), selectivities=None, **options) -> Advice:
    """Fit the model on the run directories ``runs`` and predict each fitted reader at
    ``selectivities`` (default :data:`DEFAULT_SELECTIVITIES`) for the configuration ``options``
    describe (:func:`asked`), with the crossover; ``validate_on``: run directories to predict
    and compare (:class:`Validation`). UsageError naming a bad run or option."""
    sels = [float(s) if isinstance(s, (int, float)) else positive(s, "--selectivity")
            for s in (selectivities or DEFAULT_SELECTIVITIES)]
    bad = next((s for s in sels if not 0 < s <= 100), None)
    if bad is not None:
        raise UsageError(f"--selectivity {bad:g}: outside (0, 100] percent")
    model = fit(runs)
    config = asked(model, **options)
    predictions = tuple(model.predict(r, dataclasses.replace(config, selectivity=s))
                        for s in sorted(sels) for r in model.readers)
    validation = validate(model, validate_on) if validate_on else None
    return Advice(model, config, predictions, model.crossover(config), validation)


def report_lines(root, df: pd.DataFrame) -> list[str]:
    """The report's crossover lines for a run measuring an offloading reader and a baseline at two
    or more selectivities: per configuration, the measured crossover beside the model's, fitted on
    the run itself; [] for other runs."""
    if "reader" not in df or "selectivity" not in df or df["selectivity"].nunique() < 2 \
            or not set(df["reader"]) & set(SUBJECTS) or not set(df["reader"]) & set(BASES):
        return []
    try:
        own = validate(fit([root]), [root])
    except UsageError as e:
        return [f"crossover: the cost model could not be fitted on this run ({e})"]
    if not own.median_error <= TRUSTED_ERROR:
        return [f"crossover: the cost model fitted on this run does not reproduce its points (median |time "
                f"error| {own.median_error:.0%}, above {TRUSTED_ERROR:.0%}), so it claims no crossover"]
    checks = own.crossovers
    return [f"crossover{'' if c.label == 'all' else f' at {c.label}'}: measured: {c.measured.text()}; the cost "
            f"model's (sae advise, fitted on this run itself): {c.predicted.text()} (both interpolated between "
            f"the measured selectivities; its curve: {c.curve.text()})"
            + "".join(f"; left out: {x}" for x in own.left_out if x.startswith(TENANT))
            for c in checks if c.measured.verdict != "unknown"]
