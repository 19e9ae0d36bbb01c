"""Spark standalone clusters: install, start, status, submit, stop, uninstall."""
