"""docs/cli.md, the reference of the six CLIs, generated from their click definitions
(:func:`metareserve.cli_support.reference`): ``python -m sae.cli_reference > docs/cli.md``;
tests/cli/test_cli_surface.py fails while the file differs from what this prints."""
from __future__ import annotations

import sys

from data_deploy.cli import main as data_deploy
from metareserve.cli import main as metareserve
from metareserve.cli_support import reference
from monitor_deploy.cli import main as monitor_deploy
from rados_deploy.cli import main as rados_deploy
from spark_deploy.cli import main as spark_deploy

from .cli import main as sae

CLIS = {"metareserve": metareserve, "spark-deploy": spark_deploy, "rados-deploy": rados_deploy,
        "data-deploy": data_deploy, "monitor-deploy": monitor_deploy, "sae": sae}
COMMAND = "python -m sae.cli_reference > docs/cli.md"

HEADER = f"""# Command-line reference

Every command of the six CLIs, with its usage, what it does and its options, as `--help` prints
them; every CLI also answers `--version`. Generated from the CLIs' definitions
(`{COMMAND}`): edit the help texts in the code, not this
page. The Python APIs behind the commands: each package's README.

{" · ".join(f"[{prog}](#{prog})" for prog in CLIS)}
"""


def text() -> str:
    """docs/cli.md as the installed CLIs define it."""
    return "\n".join([HEADER, *(reference(prog, group) for prog, group in CLIS.items())])


if __name__ == "__main__":
    sys.stdout.write(text())
