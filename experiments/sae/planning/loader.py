"""Load an experiment file (a Python module defining ``experiment``) with one-line errors."""
from __future__ import annotations

import dataclasses
import re
import runpy
from pathlib import Path

from metareserve.errors import UsageError

from . import spec
from .spec import Experiment, line_in, raised

_UNKNOWN = re.compile(r"(\w+)\.__init__\(\) got an unexpected keyword argument '(\w+)'")
_CLASSES = {c.__name__: c for c in (*spec.SECTIONS.values(), spec.Experiment, spec.Sweep)}


def experiment_files(directory) -> list[Path]:
    """The experiment files of ``directory``: its ``*.py`` files (not ``_*``), by name."""
    d = Path(directory)
    files = sorted(f for f in d.glob("*.py") if not f.name.startswith("_"))
    if not files:
        raise UsageError(f"{d}: no experiment files (*.py) in this directory; give a directory of experiment "
                         f"files such as experiments/, or one file")
    return files


def load_experiment(path) -> Experiment:
    """Import the experiment file at ``path`` and return its ``experiment``.

    Raises UsageError naming the file (and line) for a missing file, a syntax error, an
    exception while importing (e.g. an unknown option) or a missing/wrong ``experiment``.
    """
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{p}: experiment file not found")
    try:
        namespace = runpy.run_path(str(p), run_name=f"sae_experiment_{p.stem}")
    except SyntaxError as e:
        raise UsageError(f"{p}:{e.lineno}: syntax error: {e.msg}; fix the experiment file") from None
    except UsageError as e:
        raise UsageError(f"{p}:{line_in(e, p)}: {e}") from None
    except TypeError as e:
        m = _UNKNOWN.search(str(e))
        if not m:
            raise UsageError(f"experiment file {p}: raised {raised(e, p)}; fix the file") from None
        cls = _CLASSES.get(m.group(1))
        known = f" (options: {', '.join(f.name for f in dataclasses.fields(cls))})" if cls else ""
        raise UsageError(f"{p}:{line_in(e, p)}: unknown option {m.group(2)!r} for {m.group(1)}{known}") from None
    except Exception as e:  # an experiment file may raise anything while importing
        raise UsageError(f"experiment file {p}: raised {raised(e, p)}; fix the file") from None
    except SystemExit as e:   # sys.exit() or exit() in the file: it must define, not end the program
        raise UsageError(f"{p}:{line_in(e, p)}: the file called exit({e.code!r}) while loading; an experiment "
                         f"file defines 'experiment = Experiment(...)' and exits nothing") from None
    exp = namespace.get("experiment")
    if not isinstance(exp, Experiment):
        raise UsageError(f"{p}: defines no 'experiment = Experiment(...)'")
    try:
        spec.check_every_setting_runs(exp)
    except UsageError as e:
        raise UsageError(f"{p}: {e}") from None
    return exp

