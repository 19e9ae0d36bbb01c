"""Docs that cannot drift: every link and every repository path a document names resolves inside
the repository, every bench command line a document shows uses only the flags its script's
``--help`` lists, a fact with one owner (:func:`_facts`: versions and defaults the code owns, the
README's quick-start command and the times of its commands) has one value wherever a document
states it, no document keeps a hand-written test count, and none reads as a development log."""
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


DEV_LOG = re.compile(r"\b(?:issues? #?\d+|this session|last session|the session notes|this (?:2|two)-core machine"
                     r"|first of (?:the )?(?:four|three|two) runs|slower class|my (?:last|earlier) (?:note|run)"
                     r"|measured this turn)\b", re.I)
"""Development-log wording (the words the project's before-stop check looks for, and a few more)."""


def test_docs_speak_of_the_project_as_it_is():
    """Development history (issue numbers, "this session", "this 2-core machine", the runs of a
    measurement told one by one) belongs in commit messages, measurements on the generated
    docs/measurements.md."""
    bad = [f"{d}: {m.group(0)!r}" for d in DOCS if d.suffix == ".md"
           for m in DEV_LOG.finditer(" ".join(_text(d).split()))]
    assert not bad, "\n".join(bad)


S = r"(?:[^.]|\.(?=[\w/]))"
"""A character of one sentence: anything but the full stop that ends it (``sae.planning``, ``1.25``
and ``selectivity.py`` stay inside)."""
TINY = rf"\btiny\b(?:(?!\bpaper\b){S})*?"
"""A sentence on the tiny profile, up to where it turns to the paper profile."""
TINY_DATA = rf"\b(?:tiny dataset|TINY_DATA)\b(?:(?!\bpaper\b){S})*?"
"""A sentence on the dataset most tiny profiles share (an experiment may give its own)."""


@dataclasses.dataclass(frozen=True)
class Fact:
    """A fact with one owner: the code (``value`` given) or one document (``value`` None: the
    owner's first statement is the value). ``pattern`` finds a statement of it in any document;
    the groups that matched, joined by ``/``, are the value stated."""

    what: str
    owner: str
    pattern: re.Pattern
    value: str | None = None


def _stated(pattern: re.Pattern, text: str) -> list[str]:
    return ["/".join(g.replace(",", "") for g in m.groups() if g is not None) for m in pattern.finditer(text)]


def _facts() -> list[Fact]:
    """Every fact the documents may repeat, with its owner and the pattern of a statement of it."""
    from rados_deploy.options import CephOptions
    from rados_deploy.scan_protocol import SPEC
    from sae.planning import capacities, profiles, spec
    cls = (ROOT / "rados_deploy/rados_deploy/cls/sae.cc").read_text()
    version = ".".join(re.search(rf"#define SAE_CLASS_{part} (\d+)", cls).group(1) for part in ("MAJOR", "MINOR"))
    arrow = next(f.default for f in dataclasses.fields(CephOptions) if f.name == "class_arrow")
    from sae.connector.options import OPTIONS
    batch, codec = str(OPTIONS["batch_size"].default), str(OPTIONS["compression"].default)
    default = {f.name: f.default for section in (spec.MonitorSpec, spec.Experiment)
               for f in dataclasses.fields(section)}
    tiny, data = profiles.TINY, profiles.TINY_DATA
    rate = str(capacities.LOCAL_DEFAULTS["link_rate"])
    protocol = "the scan protocol's version"
    codecs = r"`?(none|lz4|zstd)\b"

    def seconds(value) -> str:   # "2s", 2.0 -> "2"
        return f"{float(str(value).rstrip('s')):g}"

    def option_row(name: str) -> str:   # a table row | `name` | values | default |
        return rf"\| `{name}` \| [^|]*\| `?"

    return [
        Fact("the sae class's version", "rados_deploy/rados_deploy/cls/sae.cc",
             re.compile(r'"class_version"\s*:\s*"(\d[^"]*)"'), version),
        Fact(protocol, "scan_protocol.json", re.compile(r'"protocol"\s*:\s*(\d+)'), str(SPEC.version)),
        Fact(protocol, "scan_protocol.json",
             re.compile(r"protocol of the `sae` object class \(version (\d+)\)|\| version \| `(\d+)`"), str(SPEC.version)),
        Fact("the class's Arrow", "CephOptions.class_arrow", re.compile(r'"arrow"\s*:\s*"(\d[^"]*)"'), arrow),
        Fact("the quick-start command", "README.md", re.compile(r"(\./setup\.sh && \S*sae run [^`\s]+)")),
        Fact("the quick start's time", "README.md",
             re.compile(rf"(?:[Qq]uick start|[Rr]un the main job)\b{S}*?"
                        rf"\b(\d+(?:-\d+)? min(?:utes)?\b(?: \d+ s\b)?)")),
        Fact("the README test command's time", "README.md",
             re.compile(rf"(?:[Rr]un the tests|test command|whole (?:test )?suite)\b{S}*?"
                        rf"\b(\d+(?:-\d+)? min(?:utes)?\b)")),
        Fact("the connector's default batch size", "Options.java",
             re.compile(rf"batch_size`?{S}{{0,40}}?\bdefault(?: is)?:? `?(\d[\d,]*)"
                        rf"|(\d[\d,]*)[- ]row batches{S}{{0,40}}?default|{option_row('batch_size')}(\d[\d,]*)"), batch),
        Fact("the connector's default reply compression", "Options.java",
             re.compile(rf"\bcompression`?{S}{{0,40}}?\bdefault(?: is)?:? {codecs}|{codecs}`?,? (?:is )?the connector's "
                        rf"(?:measured )?default|{option_row('compression')}{codecs}"), codec),
        Fact("the default scrape interval", "MonitorSpec.scrape_interval",
             re.compile(r"\bdefaults?:? (\d+(?:\.\d+)?)-s scrapes"), seconds(default["scrape_interval"])),
        Fact("the default pause", "Experiment.pause",
             re.compile(r"\bdefaults?:? \d+(?:\.\d+)?-s scrapes,? (?:and )?(\d+(?:\.\d+)?)-s pauses"),
             seconds(default["pause"])),
        Fact("the tiny profile's scrape interval", "profiles.TINY",
             re.compile(rf"{TINY}\b(\d+(?:\.\d+)?)-s scrapes"), seconds(tiny["monitor"]["scrape_interval"])),
        Fact("the tiny profile's pause", "profiles.TINY", re.compile(rf"{TINY}\b(\d+(?:\.\d+)?)-s pauses"),
             seconds(tiny["pause"])),
        Fact("the tiny dataset's rows and links", "profiles.TINY_DATA",
             re.compile(rf"{TINY_DATA}\b(\d+(?:\.\d+)?) ?M(?: generated)?(?: taxi)? rows{S}{{0,40}}?"
                        rf"\blinked (?:under |into )?(\d+)"),
             f"{data['rows'] / 1e6:g}/{data['link_multiplier']}"),
        Fact("the tiny dataset's object size", "profiles.TINY_DATA",
             re.compile(rf"{TINY_DATA}\b(\d+) ?MiB objects"), data["object_size"].removesuffix("MiB")),
        Fact("the local link rate per core", "capacities.LOCAL_DEFAULTS",
             re.compile(r"\b(\d+(?:\.\d+)?) ?[Gg]bit(?:/s)?(?: per core\b|/core\b)"), rate.removesuffix("gbit/core")),
        Fact("the local cores' default", "capacities.LOCAL_DEFAULTS",
             re.compile(r"`\"?(sides|shared)\"?` \(default"), capacities.LOCAL_DEFAULTS["cores"]),
    ]


def test_a_fact_has_one_value_in_every_document():
    """A fact the code owns (the class's and protocol's versions, the connector's defaults, the
    profiles' and the capacities' defaults) or one document owns (the README's quick-start command
    and the times of its two commands) has one value wherever a document states it (lines joined,
    so a statement broken over two lines counts); an owning document still states it."""
    texts = {doc: " ".join(_text(doc).split()) for doc in DOCS}
    bad = []
    for fact in _facts():
        value = fact.value
        if value is None:
            owned = _stated(fact.pattern, texts[Path(fact.owner)])
            assert owned, f"{fact.owner} no longer states {fact.what}: reword it, or its pattern ({fact.pattern.pattern})"
            value = owned[0]
        stated = [(doc, v) for doc, text in texts.items() for v in _stated(fact.pattern, text)]
        assert stated, f"no document states {fact.what}: its pattern finds nothing ({fact.pattern.pattern})"
        bad += [f"{doc}: {fact.what} is {value!r} ({fact.owner}), not {v!r}" for doc, v in stated if v != value]
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


def test_ci_runs_the_readme_test_command():
    """.ci/run's last line is the README's second quick-start command, to the letter."""
    blocks = re.findall(r"```sh\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert len(blocks) >= 2 and blocks[1].strip() == ci, (blocks[:2], ci)
