"""report/index.html in a real headless browser (Debian's chromium, installed here if missing):
the page renders, every embedded figure loads, and it states the run's provenance and caveats."""
import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from sae.results.drawing.report import make_report
from sae.results.run.directory import write_results
from sae.planning.spec import Sweep
from test_ledger_results import READERS, _fill, _run

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Marks the body once the page has loaded: how many images there are and how many decoded.
PROBE = """<script>window.addEventListener("load", () => {
  const imgs = [...document.images];
  document.body.dataset.images = imgs.length;
  document.body.dataset.loaded = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
});</script>"""


@pytest.fixture(scope="session")
def chromium():
    """Path of the chromium binary; apt-installs Debian's package on a fresh machine."""
    path = shutil.which("chromium")
    if path is None:
        env = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        for cmd in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]):
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
            assert r.returncode == 0, f"{' '.join(cmd)} failed: {r.stderr[-500:]}"
        path = shutil.which("chromium")
    return path


NODE = {"ceph": "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)",
        "kernel": "6.1.0-18-amd64", "cpu_model": "Intel Xeon E5-2640", "cpus": 16, "os": "Debian GNU/Linux 12"}
LOCK = {"version": 2, "controller": {"sae": "0.1.0"}, "sae": {"commit": "0123456789ab" + "0" * 28, "dirty": True},
        "command": "sae run experiments/selectivity.py", "nodes": {n: NODE for n in ("node1", "node2", "node3")},
        "spark": {"4.3.0": {n: {"spark": "4.3.0", "java": 'openjdk version "17.0.15" 2025-04-15', "python": "3.11.2",
                                "pyarrow": "26.0.1"} for n in ("node2", "node3")}}, "builds": {}, "changes": []}
"""A versions.lock as a run on three hosts records it."""


def _browser(chromium, tmp_path, *args, url):
    r = subprocess.run([chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args, url],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-1000:]
    return r.stdout


def test_index_html_renders_with_every_figure(chromium, tmp_path):
    p, run, ledger = _run(tmp_path, Sweep(cartesian={"selectivity": [1, 10, 100], "reader": READERS}),
                          figures=("selectivity", "compute-side"))
    _fill(p, run, ledger, np.random.default_rng(2))
    run.write_yaml(run.versions, LOCK)
    write_results(run)
    paths = make_report(run.root)
    page = run.report / "index.html"
    figures = [x for x in paths if x.suffix == ".png"]
    assert page in paths and len(figures) == 4
    html = page.read_text()
    assert "src=\"data:image/png;base64," in html and "<img src=\"report" not in html   # self-contained
    for text in ("48.9x", "no-offload", "vanilla", "p99", "Warm-up rule", "ETA", "total CPU s off/base",
                 "Provenance", "0123456789ab (dirty: uncommitted changes)", "16.2.15 pacific (node1, node2, node3)",
                 "openjdk 17.0.15 (node2, node3)", "6.1.0-18-amd64 (node1, node2, node3)",
                 "Intel Xeon E5-2640, 16 logical CPUs (node1, node2, node3)", "Caveats",
                 "within-run only: the intervals hold the spread of this run"):
        assert text in html, text
    assert html.index("At 1 % selectivity") < html.index("At 10 % selectivity") < html.index("At 100 % selectivity")

    probed = tmp_path / "probed.html"   # a copy with the probe: the report itself has no script
    probed.write_text(html.replace("</body>", PROBE + "</body>"))
    dom = _browser(chromium, tmp_path, "--virtual-time-budget=5000", "--dump-dom",
                   url=probed.as_uri())
    body = re.search(r"<body[^>]*>", dom).group(0)
    images = re.search(r'data-images="(\d+)"', body)
    loaded = re.search(r'data-loaded="(\d+)"', body)
    assert images and loaded, body
    assert int(images.group(1)) == len(figures) == int(loaded.group(1)), body

    shot = tmp_path / "page.png"
    _browser(chromium, tmp_path, "--window-size=1280,2400", f"--screenshot={shot}", url=page.as_uri())
    pixels = np.asarray(Image.open(shot).convert("L"))
    assert pixels.shape == (2400, 1280) and pixels.std() > 20   # not a blank page
    shutil.copy(shot, run.report / "screenshot.png")   # kept with the run for a look
