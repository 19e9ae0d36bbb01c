"""Pure layer: the report's storage figures and per-host rates drawn over the intervals they were
measured in (no cluster; tests/sae_tests/test_e2e.py checks the same on a real run)."""
import numpy as np
import pandas as pd

from sae.results.drawing import plotting
from sae.results.drawing.figures import host_rates, plot_storage_ops, plot_storage_phases, plot_time_composition
from sae.results.run.storage_work import CLIENT_PHASES, CLS_PHASES


def counters(times, values, measured=None, node="node1", counter="cpu_seconds"):
    return pd.DataFrame({"timestamp": times, "node": node, "counter": counter, "series": "", "value": values,
                         "measured": measured if measured is not None else times})


def test_rates_stay_in_the_interval_they_were_measured_in():
    # 2 CPU-s between the readings at 11 and 12; the scrapes saw them 0.4 s late
    c = counters([10.4, 11.4, 12.4, 13.4], [0.0, 0.0, 2.0, 2.0], measured=[10.0, 11.0, 12.0, 13.0])
    t, rates = host_rates(c, start=11.2, end=11.8, pad=1.0)
    r = rates["cpu_seconds"]["node1"]
    busy = t[r > 0] + 11.2
    assert busy.min() >= 11.0 - 1e-9 and busy.max() < 12.0 and np.allclose(r[r > 0], 2.0)
    step = t[1] - t[0]
    assert abs(r.sum() * step - 2.0) < 0.06   # the whole 2 CPU-s is drawn, once


def test_without_read_times_the_scrape_times_are_used_and_resets_continue():
    c = counters([0.0, 1.0, 2.0, 3.0], [5.0, 6.0, 0.5, 1.5]).drop(columns="measured")   # reset at 2
    t, rates = host_rates(c, start=0.0, end=3.0, pad=0.0)
    r = rates["cpu_seconds"]["node1"]
    assert np.allclose(r[(t >= 0) & (t < 1)], 1.0) and np.allclose(r[(t >= 1) & (t < 2)], 0.5)


def _results(**extra):
    rows = []
    for sel in (1, 100):
        for reader in ("offload", "no-offload", "vanilla"):
            for rep in range(3):
                row = {"point": f"p{sel}{reader}", "order": 0, "repetition": rep, "warmup": rep == 0,
                       "selectivity": sel, "reader": reader, "total_s": 1.0, "storage_cpu_s": 2.0,
                       "osd_read_ops": 8, "osd_store_read_bytes": 4e7, "osd_read_reply_bytes": 1e6 * sel}
                if reader != "vanilla":
                    row.update({f"cls_{p}_s": 0.05 * (i + 1) for i, p in enumerate(CLS_PHASES)},
                               cls_total_s=3.0, cls_calls=8)
                rows.append(row)
    return pd.DataFrame(rows)


def test_storage_figures_stack_the_phases_per_selectivity_and_reader(tmp_path):
    df = _results()
    with plotting.keeping_figures() as kept:
        paths = plot_storage_phases(df, tmp_path) + plot_storage_ops(df, tmp_path)
    assert [p.name for p in paths] == ["storage-phases.png", "storage-ops.png"]
    fig = dict(kept)[tmp_path / "storage-phases.png"]
    bars = [p for p in fig.axes[0].patches]
    # 4 bars (2 selectivities x the 2 readers with phases), every phase + the unphased rest each
    assert len(bars) == 4 * (len(CLS_PHASES) + 1)
    tops = {round(b.get_x(), 3): b.get_y() + b.get_height() for b in bars}
    assert all(abs(top - 3.0) < 1e-9 for top in tops.values())   # stacked up to the class's total
    assert plot_storage_phases(df[df.reader == "vanilla"].drop(columns="cls_total_s"), tmp_path) == []


def test_time_composition_stacks_a_requests_phases_per_selectivity_and_reader(tmp_path):
    """Per request (the query's sums over its 8 calls): the compute side's phases stack up to the
    measured reading time, the class's phases beside them; nothing for vanilla or old runs."""
    client = {"client_request_s": 0.08, "reply_wait_s": 0.8, "client_decode_s": 0.4, "client_spark_s": 0.32,
              "client_reader_s": 1.6}
    df = _results()
    df = df.assign(**{c: np.where(df["reader"] == "vanilla", np.nan, v) for c, v in client.items()})
    with plotting.keeping_figures() as kept:
        assert [p.name for p in plot_time_composition(df, tmp_path)] == ["time-composition.png"]
    ax = dict(kept)[tmp_path / "time-composition.png"].axes[0]
    bars = ax.patches
    assert len(bars) == 4 * (len(CLIENT_PHASES) + len(CLS_PHASES))   # 2 selectivities x 2 readers
    left = {}
    for b in bars:
        if b.get_x() + b.get_width() / 2 < round(b.get_x() + b.get_width() / 2):   # the compute side's bar
            left[round(b.get_x(), 3)] = max(left.get(round(b.get_x(), 3), 0), b.get_y() + b.get_height())
    assert len(left) == 4 and all(abs(top - 200.0) < 1e-6 for top in left.values())   # 1.6 s / 8 calls, in ms
    assert plot_time_composition(df[df.reader == "vanilla"], tmp_path) == []
    assert plot_time_composition(df.drop(columns="client_reader_s"), tmp_path) == []


def test_the_composition_is_one_repetitions_so_its_phases_add_up_to_its_reading_time(tmp_path):
    """Phases whose medians, taken one by one, add up to less than the reading time's median
    (each repetition's add up to its own): the bars stack the median repetition's, up to its tick,
    and the OSD's bar beside them is the same repetition's."""
    wait, decode = [1.0, 0.2, 0.3], [0.2, 1.0, 0.3]   # readings 1.2, 1.2, 0.6 (+ 0.4 of Spark's)
    rows = [{"point": "p", "order": 0, "repetition": rep + 1, "warmup": False, "selectivity": 100, "reader": "offload",
             "total_s": 1.0, "storage_cpu_s": 2.0, "cls_calls": 8, "cls_total_s": 3.0,
             **{f"cls_{p}_s": 0.05 for p in CLS_PHASES}, "cls_decode_s": 0.1 * (rep + 1),
             "client_request_s": 0.0, "reply_wait_s": w, "client_decode_s": d, "client_spark_s": 0.4,
             "client_reader_s": w + d + 0.4} for rep, (w, d) in enumerate(zip(wait, decode))]
    df = pd.DataFrame(rows)   # phase medians: 0.3 + 0.3 + 0.4 = 1.0 s, the reading's median 1.6 s
    with plotting.keeping_figures() as kept:
        plot_time_composition(df, tmp_path)
        plot_storage_phases(df, tmp_path)
    ax = dict(kept)[tmp_path / "time-composition.png"].axes[0]
    compute = [b for b in ax.patches if b.get_x() < -0.1]
    osd = [b for b in ax.patches if b.get_x() > -0.1]
    tick = ax.collections[0].get_offsets()[0][1]
    assert abs(tick - 1.6 / 8 * 1e3) < 1e-9
    assert abs(compute[-1].get_y() + compute[-1].get_height() - tick) < 1e-9   # stacked up to the tick
    # repetition 1's, per call: wait, decode, spark (no request time in any bar: left out)
    assert [round(b.get_height(), 6) for b in compute] == [125.0, 25.0, 50.0]
    assert abs(osd[CLS_PHASES.index("decode")].get_height() - 0.1 / 8 * 1e3) < 1e-9
    storage = dict(kept)[tmp_path / "storage-phases.png"].axes[0]
    assert abs(max(b.get_y() + b.get_height() for b in storage.patches) - 3.0) < 1e-9


def test_init_and_compute_bars_reach_the_median_query_time(tmp_path):
    """Init and compute whose medians, taken apart, add up to less than the median query time:
    the stacked bar is the median repetition's (of two, the mean of both), up to the median."""
    from sae.results.drawing.axis_figures import plot_objectsize
    rows = []
    for size, splits in ((4 << 20, [(0.1, 1.9), (0.9, 0.3), (0.2, 0.4)]), (16 << 20, [(0.5, 1.0), (0.3, 2.0)])):
        for rep, (init, compute) in enumerate(splits):
            rows.append({"point": f"p{size}", "order": 0, "repetition": rep, "warmup": False, "selectivity": 1,
                         "reader": "offload", "object_size": size, "init_s": init, "compute_s": compute,
                         "total_s": init + compute})
    df = pd.DataFrame(rows)   # 4 MiB: medians 0.2 + 0.4 = 0.6 s, the query time's 1.2 s
    with plotting.keeping_figures() as kept:
        plot_objectsize(df, tmp_path)
    bars = dict(kept)[tmp_path / "objectsize.png"].axes[0].patches
    tops = sorted(round(b.get_y() + b.get_height(), 9) for b in bars if b.get_y() > 0)
    assert tops == [1.2, 1.9]   # 4 MiB: repetition 1's 0.9 + 0.3; 16 MiB: the mean of 1.5 and 2.3
