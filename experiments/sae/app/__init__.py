"""Programs sae runs on the driver host: the Spark application that runs the pending repetitions
of a group of sweep points (run_points.py) and the backend-only scan client (backend_scan.py)."""
from pathlib import Path

APP = Path(__file__).with_name("run_points.py")
BACKEND_SCAN = Path(__file__).with_name("backend_scan.py")
