"""A run's host capacities as its ``capacities/`` records hold them (written by the shape stage):
what was declared beside what was measured, per host (the report's hosts table) and per side and
link (the summary's lines and caveats)."""
from __future__ import annotations

from metareserve import Calibration, Capacities, format_rate, format_size

from .directory import RunDir

HOST_HEAD = ["host", "side", "roles", "cores", "memory", "link", "usable cores (measured)"]


def records(run: RunDir) -> list[dict]:
    """The run's capacity records in plan order (one per shape key)."""
    seen, out = set(), []
    for point in run.load_plan().points:
        if point.shape_key in seen:
            continue
        seen.add(point.shape_key)
        record = run.read_yaml(run.capacities(point.shape_key))
        if record:
            out.append(record)
    return out


def _cores(measure) -> str:
    if measure is None:
        return "-"
    declared = "-" if measure.declared is None else f"{measure.declared:g}"
    return f"{declared} / {measure.measured:.2f}"


def sides_text(record: dict) -> str:
    """A capacity record's sides and link, declared / measured: ``compute cores 1 / 0.99, storage
    cores 1 / 0.99, link node1->node2 1.25Gbit/s / 1.201Gbit/s``."""
    cal = Calibration.from_dict(record["calibration"])
    link = cal.link()
    link_text = "-" if link is None else (
        f"{link.src}->{link.dst} {format_rate(link.declared) if link.declared else 'unlimited'} / "
        f"{format_rate(link.measured)}")
    return f"compute cores {_cores(cal.core('compute'))}, storage cores {_cores(cal.core('storage'))}, link {link_text}"


def summary_lines(run: RunDir) -> list[str]:
    """One line per capacity set the run used: each side's cores and the storage → compute link,
    declared / measured (:func:`sides_text`), then the calibration's warnings."""
    lines = []
    for record in records(run):
        emulated = "" if record.get("provider", "local") == "local" else f" (provider {record['provider']}: " \
                                                                            f"measured only)"
        lines.append(f"capacities{emulated}, declared / measured: {sides_text(record)}")
        lines += [f"warning: {w}" for w in Calibration.from_dict(record["calibration"]).warnings()]
    return lines


def host_rows(run: RunDir, hosts: list[tuple[str, str, str]]) -> list[list[str]]:
    """The hosts table: (host, side, roles) rows extended with the first capacity record's
    declared cores, memory and link, and the usable cores measured on each host alone."""
    recs = records(run)
    if not recs:
        return [[h, side, roles, "-", "-", "-", "-"] for h, side, roles in hosts]
    declared, cal = Capacities.from_dict(recs[0]["declared"]), Calibration.from_dict(recs[0]["calibration"])
    rows = []
    for h, side, roles in hosts:
        cap, measured = declared.of(h), cal.core(h)
        rows.append([h, side, roles, cap.cpus or "all", format_size(cap.memory) if cap.memory else "unlimited",
                     format_rate(cap.link_rate), "-" if measured is None else f"{measured.measured:.2f}"])
    return rows
