"""``data-deploy`` CLI: exit codes and one-line messages per error family, plus the real entry point."""
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from data_deploy.cli import main

CLI = str(Path(sys.executable).with_name("data-deploy"))


def test_generate_split_threshold(tmp_path):
    r = CliRunner().invoke(main, ["generate", "--rows", "70000", "--seed", "1", "--out", str(tmp_path / "g")])
    assert r.exit_code == 0 and "70000 rows" in r.output
    r = CliRunner().invoke(main, ["split", "--object-size", "4MiB", str(tmp_path / "g"), "--out", str(tmp_path / "s")])
    assert r.exit_code == 0 and r.output.startswith("split 1 files, 70000 rows")
    r = CliRunner().invoke(main, ["split", "--object-size", "4MiB", str(tmp_path / "g"), "--out", str(tmp_path / "s")])
    assert r.exit_code == 0 and "no changes" in r.output
    r = CliRunner().invoke(main, ["threshold", str(tmp_path / "s"), "--fraction", "0.1"])
    assert r.exit_code == 0 and float(r.output) > 0


def test_usage_errors_exit_2_with_one_line(tmp_path, local_cluster):
    cases = [
        (["split", "--object-size", "100KiB", str(tmp_path), "--out", str(tmp_path / "o")], "multiple of 64KiB"),
        (["split", "--object-size", "4MiB", str(tmp_path / "missing"), "--out", str(tmp_path / "o")], "no such file"),
        (["threshold", str(tmp_path), "--fraction", "0.1", "--column", "x"], "no *.parquet files"),
        (["deploy", "--reservation", str(local_cluster.path), "--plugin", "nfs", "--object-size", "4MiB",
          str(tmp_path)], "unknown deploy plugin 'nfs'"),
        (["deploy", "--object-size", "4MiB", str(tmp_path)], "no reservation given"),
    ]
    for argv, text in cases:
        r = CliRunner().invoke(main, argv, env={"SAE_RESERVATION": ""})
        assert r.exit_code == 2, (argv, r.output)
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and text in lines[0], (argv, r.output)


def test_verify_missing_dataset_exits_1(local_cluster, tmp_path):
    r = subprocess.run([CLI, "verify", "--reservation", str(local_cluster.path), "--plugin", "local",
                        "--node", "node2", str(tmp_path / "none")], capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith("error: verify local:") and "does not exist" in r.stderr
