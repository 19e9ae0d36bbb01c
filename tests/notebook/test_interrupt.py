"""The kernel's interrupt (SIGINT to the kernel process alone, unlike a terminal's Ctrl-C, which
reaches the whole process group) during ``sae.run`` in a real IPython kernel: KeyboardInterrupt
in the cell, the Spark application stopped, no repetition left running; ``sae.resume`` in the
same kernel then finishes the run and returns its handle."""
from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

from jupyter_client.manager import start_new_kernel

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sae_e2e", ROOT / "tests" / "sae_tests" / "test_e2e.py")
e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(e2e)


def _states(run: Path) -> list[str]:
    ledger = run / "ledger.json"
    return [e["state"] for e in json.loads(ledger.read_text())["entries"].values()] if ledger.exists() else []


def test_kernel_interrupt_stops_the_application_and_resume_finishes(sae_cluster, figure):
    root, res = sae_cluster
    exp = e2e._experiment(root, "kernel", [10, 100], 2)
    out = root / "interrupt"
    run_dir = out / "kernel" / "latest"
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(root))
    try:
        kc.execute_interactive(f"import sae; options = sae.RunOptions(reservation={str(res.path)!r})", timeout=120)
        msg = kc.execute(f"sae.run({str(exp)!r}, out={str(out)!r}, options=options)")
        deadline = time.monotonic() + 900
        while "done" not in _states(run_dir):
            assert time.monotonic() < deadline, "no repetition done in 15 minutes"
            time.sleep(0.5)
        at = time.monotonic()
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=600)
        stopped = time.monotonic() - at
        assert reply["parent_header"]["msg_id"] == msg
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        run = run_dir.resolve()
        assert not e2e._processes_naming(f"/sae/{run.name}/"), "the Spark application outlived the interrupt"
        states = _states(run)
        assert "running" not in states and "done" in states and set(states) - {"done"}
        stdout = []

        def hook(m):
            if m["content"].get("name") == "stdout":
                stdout.append(m["content"]["text"])
        reply = kc.execute_interactive(f"h = sae.resume({str(run)!r}); print(len(h.results), h.root)",
                                       timeout=900, output_hook=hook)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert "".join(stdout).split()[-2:] == ["4", str(run)]
        assert set(_states(run)) == {"done"}
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    figure(f"kernel interrupt: KeyboardInterrupt and the application stopped {stopped:.1f}s after it")
