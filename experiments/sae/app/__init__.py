"""The Spark application that runs every repetition of one sweep point (see run_point.py)."""
from pathlib import Path

APP = Path(__file__).with_name("run_point.py")
