"""Interrupts, both kinds in one run: a terminal's Ctrl-C of ``sae run`` (SIGINT to the whole
process group), then the kernel's interrupt (SIGINT to the kernel process alone) during
``sae.resume`` in a real IPython kernel; each stops the Spark application and leaves no
repetition running, and ``sae.resume`` in the kernel (plain Python: no logging configured)
finishes the run with a run-marker window per repetition in Prometheus."""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import time
from pathlib import Path

import pytest
from jupyter_client.manager import start_new_kernel

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sae_e2e", ROOT / "tests" / "sae_tests" / "test_e2e.py")
e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(e2e)


def _states(run: Path) -> list[str]:
    ledger = run / "ledger.json"
    return [e["state"] for e in json.loads(ledger.read_text())["entries"].values()] if ledger.exists() else []


def _stopped_cleanly(run: Path) -> list[str]:
    """The run's states after an interrupt: the application gone, nothing left running, some
    repetitions done and some not."""
    assert not e2e._processes_naming(f"/sae/{run.name}/"), "the Spark application outlived the interrupt"
    states = _states(run)
    assert "running" not in states and "done" in states and set(states) - {"done"}, states
    return states


@pytest.fixture
def interruptible():
    """SIGINT handled in this process while the test runs, so the processes it starts (``sae
    run``, the kernel) take a terminal's Ctrl-C: a shell starts a background job (``.ci/run &``)
    with SIGINT ignored, children inherit that, and Python then installs no KeyboardInterrupt
    handler; a handler, unlike SIG_IGN, is reset to the default at exec."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_terminal_then_kernel_interrupts_stop_the_application_and_resume_finishes(sae_cluster, figure, interruptible):
    """Ctrl-C of ``sae run`` in a terminal (SIGINT to its whole process group): one line, exit 130,
    the application stopped, no repetition left running. Then ``sae.resume`` in a real IPython
    kernel, stopped by the kernel's interrupt (SIGINT to the kernel process alone):
    KeyboardInterrupt in the cell, the application stopped; ``sae.resume`` in the same kernel
    finishes every repetition once, with the same answers, and returns the run's handle; the
    application published a window per repetition to Prometheus though no logging was set up."""
    root, res = sae_cluster
    exp = e2e._experiment(root, "interrupted", [10, 100], 2)
    planned = json.loads(e2e.sae_cli("plan", exp, "--json").stdout)
    code, out, ctrl_c, run = e2e._run_with_fault(root, exp, "interrupted", planned,
                                                 lambda proc: os.killpg(proc.pid, signal.SIGINT))
    assert code == 130, out[-3000:]
    assert out.strip().splitlines()[-1] == "error: interrupted"
    done_before = _stopped_cleanly(run).count("done")
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(root))
    try:
        kc.execute_interactive("import sae", timeout=120)
        msg = kc.execute(f"sae.resume({str(run)!r})")
        deadline = time.monotonic() + 900
        while _states(run).count("done") <= done_before:
            assert time.monotonic() < deadline, "the resume did no repetition in 15 minutes"
            time.sleep(0.5)
        at = time.monotonic()
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=600)
        stopped = time.monotonic() - at
        assert reply["parent_header"]["msg_id"] == msg
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        _stopped_cleanly(run)
        stdout = []

        def hook(m):
            if m["content"].get("name") == "stdout":
                stdout.append(m["content"]["text"])
        reply = kc.execute_interactive(f"h = sae.resume({str(run)!r}); print(len(h.results), h.root)",
                                       timeout=900, output_hook=hook)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert "".join(stdout).split()[-2:] == ["4", str(run)]
        assert set(_states(run)) == {"done"}
        df = e2e._exact(run, planned)
        # the kernel configured no logging, yet the run marker travelled from the application to
        # Prometheus: one window per repetition; and nothing was left in the working directory
        e2e.windows_match_rows(res, run, df)
        assert not list(root.glob("spark-logs*"))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    figure(f"Ctrl-C: stopped in {ctrl_c:.1f}s; kernel interrupt: KeyboardInterrupt and the application stopped "
           f"{stopped:.1f}s after it")
