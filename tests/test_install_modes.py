"""The suite does not depend on how sae was installed: with pip's default editable install (an
import finder, not a path entry) no test folder may shadow the package it tests. Builds a
throw-away venv with plain ``pip install -e`` of every package (their dependencies, and the
setuptools that builds them, as setup.sh does, come from this venv through a .pth file) and runs
pure test modules that import the packages from it."""
from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path



ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("metareserve", "spark_deploy", "rados_deploy", "data_deploy", "monitor_deploy", "experiments")
IMPORTS = ("metareserve", "spark_deploy", "rados_deploy", "data_deploy", "monitor_deploy", "sae")
MODULES = ("sae_tests/test_settings.py", "metareserve_tests/test_model.py")


def test_no_test_folder_is_named_like_a_package():
    assert not [p for p in IMPORTS if (ROOT / "tests" / p).exists()]


def test_suite_passes_after_a_plain_editable_install(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", venv], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True,
                          capture_output=True, text=True).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "--disable-pip-version-check",   # everything is here: no network
                    *[a for p in PACKAGES for a in ("-e", ROOT / p)]], check=True, cwd=tmp_path)
    assert list(Path(site).glob("__editable___*_finder.py")), "pip made path entries, not finders: nothing is checked"
    r = subprocess.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not cluster",
                        *[ROOT / "tests" / m for m in MODULES]], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    found = subprocess.run([py, "-c", "import sae, metareserve; print(sae.load_results.__module__)"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert found.returncode == 0 and found.stdout.startswith("sae"), found.stderr[-2000:]
