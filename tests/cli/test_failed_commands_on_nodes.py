"""Commands that fail on the session's local-cluster hosts after they began making things there
take it back (the working-directory side is test_failed_commands_leave_nothing.py)."""
from __future__ import annotations

import tarfile

from click.testing import CliRunner

from spark_deploy.cli import main as spark_deploy
from spark_deploy.software import TARBALL_ROOT, tarball_home

ROLES = ["--role", "spark-master=node1", "--role", "spark-worker=node2"]


def test_a_tarball_that_is_not_spark_leaves_no_copy_on_the_nodes(local_cluster, cluster, tmp_path):
    (tmp_path / "not-spark" / "bin").mkdir(parents=True)
    (tmp_path / "not-spark" / "README").write_text("no spark-class here\n")
    tarball = tmp_path / "not-spark-9.9.tgz"
    with tarfile.open(tarball, "w:gz") as t:
        t.add(tmp_path / "not-spark", arcname="not-spark")
    paths = [f"{TARBALL_ROOT}/.incoming/{tarball.name}", tarball_home(str(tarball))]
    r = CliRunner().invoke(spark_deploy, ["install", "-r", str(local_cluster.path), *ROLES,
                                          "--spark-source", str(tarball)])
    errors = [line for line in r.output.splitlines() if line.startswith("error: ")]
    assert r.exit_code == 1 and len(errors) == 1 and "not a Spark distribution" in errors[0], r.output
    for node in ("node1", "node2"):
        left = cluster.run(["ls", "-d", *paths], nodes=[node], stage="test", check=False)[node]["stdout"]
        assert left == "", (node, left)
