"""Shipped with --py-files: the sampling function pi.py's executors import."""
import random


def inside(_):
    x, y = random.random(), random.random()
    return 1 if x * x + y * y <= 1 else 0
