"""Docs that cannot drift: every link and every repository path a document names resolves inside
the repository, every bench command line a document shows uses only the flags its script's
``--help`` lists, a fact the code owns (the class's and protocol's versions) or the README states
(the quick-start command) has one value wherever a document states it, and no document keeps a
hand-written test count."""
from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(Path(p) for p in subprocess.run(["git", "ls-files", "*.md", "*.ipynb"], cwd=ROOT, capture_output=True,
                                              text=True, check=True).stdout.split())
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(r"^(?:\.\./|\./)?(?:[\w.-]+/)+[\w.-]*$|^[\w.-]+/[\w./-]*\.(?:py|md|toml|sh|java|cc|h|yaml|ipynb)$")
TOP = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}
BENCH_CALL = re.compile(r"bench/(\w+\.py)((?:\s+(?:--?[\w-]+|[A-Z][A-Z_]*|\[|\]|[\w.,/%=-]+|\.\.\.))*)")


def _text(doc: Path) -> str:
    return (ROOT / doc).read_text()


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    return {_slug(m) for m in re.findall(r"^#+\s+(.*)$", _text(doc), re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=str)
def test_links_resolve_inside_the_repository(doc):
    bad = []
    for target in LINK.findall(_text(doc)):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (ROOT / doc).parent / path if path else ROOT / doc
        inside = dest.resolve().is_relative_to(ROOT)
        if not inside or not dest.exists():
            bad.append(f"{target}: {'outside the repository' if not inside else 'no such file'}")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.relative_to(ROOT)):
            bad.append(f"{target}: no heading with that anchor")
    assert not bad, f"{doc}: " + "; ".join(bad)


@pytest.mark.parametrize("doc", [d for d in DOCS if d.suffix == ".md"], ids=str)
def test_repository_paths_named_in_code_spans_exist(doc):
    """A path such as `experiments/sae/planning/spec.py` or `tests/fixtures/` must exist (from the root or
    from the document's folder); run-time paths (results/, /var/lib/...) are not repository paths."""
    bad = []
    for span in CODE.findall(_text(doc)):
        for word in span.split():
            word = word.strip("(),;:'\"").split("::")[0].split(":")[0]
            if not REPO_PATH.match(word) or word.split("/")[0].lstrip(".") not in TOP | {""}:
                continue
            if word.startswith(("results/", "runs/")) or "*" in word:
                continue
            if not ((ROOT / word).exists() or ((ROOT / doc).parent / word).exists()):
                bad.append(word)
    assert not bad, f"{doc} names paths that are not in the repository: {sorted(set(bad))}"


def _bench_usage(script: str) -> str | None:
    """The usage text of ``bench/<script> --help``; None for a script that is not a CLI (a Spark
    application taking JSON, like connector_app.py)."""
    if "--help" not in (ROOT / "bench" / script).read_text() and "argparse" not in (ROOT / "bench" / script).read_text() \
            and "click" not in (ROOT / "bench" / script).read_text():
        return None
    r = subprocess.run([sys.executable, str(ROOT / "bench" / script), "--help"], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0, f"bench/{script} --help: {r.stderr[-500:]}"
    return r.stdout


def _positionals(usage: str) -> list[str]:
    """Upper-case words of a usage line that no option takes (its positional arguments)."""
    head = usage.split("\n\n")[0]
    return re.findall(r"(?<![\w-])([A-Z][A-Z_]+)(?![\w-])", re.sub(r"--?[\w-]+(?:[ =][A-Z][A-Z_]*(?: \[[A-Z_ .]+\])?)*", "", head))


def test_bench_command_lines_in_docs_match_their_scripts_help():
    """Every ``bench/X.py ARGS`` a document (or a bench script's own docstring) shows uses flags
    that ``bench/X.py --help`` lists, and a leading positional argument only where it takes one."""
    sources = [ROOT / d for d in DOCS if d.suffix == ".md"] + sorted((ROOT / "bench").glob("*.py"))
    usages: dict[str, str | None] = {}
    bad = []
    for src in sources:
        for script, args in BENCH_CALL.findall(src.read_text()):
            where = f"{src.relative_to(ROOT)}: bench/{script}"
            if not (ROOT / "bench" / script).exists():
                bad.append(f"{where} does not exist")
                continue
            if script not in usages:
                usages[script] = _bench_usage(script)
            usage = usages[script]
            if usage is None:
                continue
            for flag in re.findall(r"(?<![\w-])(--[\w-]+)", args):
                if flag != "--help" and not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", usage):
                    bad.append(f"{where} has no {flag}")
            first = args.split()[0] if args.split() else ""
            if re.fullmatch(r"[A-Z][A-Z_]+", first) and not _positionals(usage):
                bad.append(f"{where} takes no positional argument {first}")
    assert any(usages.values()), "no bench command line found in the docs"
    assert not bad, "\n".join(sorted(set(bad)))


def test_no_hand_kept_test_counts():
    """Test counts go stale with the next test; pytest prints them."""
    bad = [f"{d}: {m.group(0)!r}" for d in DOCS if d.suffix == ".md"
           for m in re.finditer(r"\b\d[\d,]*\s+(?:tests|test cases|cases|passed)\b", _text(d))]
    assert not bad, "\n".join(bad)


def test_docs_speak_of_the_project_as_it_is():
    """Development history (issue numbers, "this session") belongs in commit messages."""
    bad = [f"{d}: {m.group(0)!r}" for d in DOCS if d.suffix == ".md"
           for m in re.finditer(r"\b(?:[Ii]ssues? \d+|this session)\b", _text(d))]
    assert not bad, "\n".join(bad)


def _code_facts() -> list[tuple[str, re.Pattern, str]]:
    """(what, the pattern of a document stating it, the value the code owns)."""
    from rados_deploy.options import CephOptions
    from rados_deploy.scan_protocol import SPEC
    cls = (ROOT / "rados_deploy/rados_deploy/cls/sae.cc").read_text()
    version = ".".join(re.search(rf"#define SAE_CLASS_{part} (\d+)", cls).group(1) for part in ("MAJOR", "MINOR"))
    arrow = next(f.default for f in dataclasses.fields(CephOptions) if f.name == "class_arrow")
    protocol = "the scan protocol's version (scan_protocol.json)"
    return [("the sae class's version (cls/sae.cc)", re.compile(r'"class_version"\s*:\s*"(\d[^"]*)"'), version),
            (protocol, re.compile(r'"protocol"\s*:\s*(\d+)'), str(SPEC.version)),
            (protocol, re.compile(r"protocol of the `sae` object class \(version (\d+)\)|\| version \| `(\d+)`"),
             str(SPEC.version)),
            ("the class's Arrow (CephOptions.class_arrow)", re.compile(r'"arrow"\s*:\s*"(\d[^"]*)"'), arrow)]


def _quick_start() -> str:
    """The README's quick-start command: the first command of its Quick start section."""
    section = _text(Path("README.md")).split("## Quick start", 1)[1]
    return re.search(r"```sh\n(.+)\n", section).group(1)


def test_a_fact_has_one_value_in_every_document():
    """The class's and the protocol's versions as the code defines them, and the quick-start
    command as the README gives it, wherever a document repeats them (lines joined, so a code
    span broken over two lines counts)."""
    facts = _code_facts()
    quick = _quick_start()
    assert "sae run" in quick, f"README.md: no quick-start command found ({quick!r})"
    facts.append(("the README's quick-start command", re.compile(r"(\./setup\.sh && \S*sae run [^`\s]+)"), quick))
    bad = []
    for doc in DOCS:
        text = " ".join(_text(doc).split())
        for what, pattern, value in facts:
            stated = [next(g for g in m.groups() if g is not None) for m in pattern.finditer(text)]
            bad += [f"{doc}: {what} is {value!r}, not {v!r}" for v in stated if v != value]
    assert not bad, "\n".join(bad)


def test_citation_states_the_released_version_and_complete_references():
    """CITATION.cff (CFF 1.2; `cffconvert --validate` checks the whole schema) names the version
    the packages carry, and every reference its type, title and authors, a DOI in DOI form."""
    import importlib.metadata

    import yaml
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["version"] == importlib.metadata.version("sae")
    for ref in cff["references"]:
        assert {"type", "title", "authors", "year"} <= set(ref), ref.get("title")
        assert "doi" not in ref or re.fullmatch(r"10\.\d{4,9}/\S+", ref["doi"]), ref["title"]
