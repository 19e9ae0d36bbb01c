"""The Spark application that runs the pending repetitions of a group of sweep points (see run_points.py)."""
from pathlib import Path

APP = Path(__file__).with_name("run_points.py")
