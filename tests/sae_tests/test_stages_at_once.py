"""Pure: the install and start stages run their deployers at once (sae.running.stages._at_once):
results in the order named, and an interrupt (Ctrl-C, a notebook kernel's interrupt) names the
calls it waits for, then stops once they have ended."""
import logging
import signal
import threading
import time

import pytest

from sae.running.stages import _at_once


def test_results_come_in_the_order_named():
    assert _at_once({"ceph": lambda: "c", "spark": lambda: (time.sleep(0.05), "s")[1], "monitoring": lambda: "m"},
                    "sae start") == ["c", "s", "m"]


def test_an_interrupt_names_what_it_waits_for_and_stops_after_it(caplog):
    ended = []

    def spark():
        time.sleep(1.0)
        ended.append("spark")

    before = signal.signal(signal.SIGINT, signal.default_int_handler)   # CI may start pytest with SIGINT ignored
    try:
        threading.Timer(0.3, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT)).start()
        with caplog.at_level(logging.WARNING), pytest.raises(KeyboardInterrupt):
            _at_once({"ceph": lambda: None, "spark": spark}, "sae install")
    finally:
        signal.signal(signal.SIGINT, before)
    assert ended == ["spark"]   # the call under way ended before the interrupt went on
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and lines[0].startswith("[sae install] interrupted: waiting for spark to finish"), lines
