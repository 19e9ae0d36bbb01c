"""Programs sae runs on the nodes: the Spark application that runs the pending repetitions of a
group of sweep points (run_points.py, on the driver host, with keyed.py beside it: what it keeps
in memory between queries, and writes.py: the write jobs) and the scan client (backend_scan.py: backend-only reads from the
driver host, or a second application's scans from a storage host)."""
from pathlib import Path

APP = Path(__file__).with_name("run_points.py")
APP_MODULES = (Path(__file__).with_name("keyed.py"), Path(__file__).with_name("writes.py"))
"""What the application imports beside it (shipped with ``--py-files``)."""
BACKEND_SCAN = Path(__file__).with_name("backend_scan.py")
EVENT_TAG = "sae-rep "
"""The prefix of run_points.py's event lines on its output (it runs on the driver host without sae,
so it spells the prefix itself: its ``TAG``)."""
