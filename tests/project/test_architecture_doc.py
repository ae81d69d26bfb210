"""docs/architecture.md says only what is true, in sentences a newcomer can read.

Each rule is a function from the page's text to a list of problems, so each one is tested on
a small document with a planted mistake before it is run on the real page:

- every repository path and every dotted code name the page writes in backticks exists
  (``contract.cache.BudgetCache``: a module, then names defined in it, found with ``ast``);
- the two flows (``didChange``, ``budgetlens check``) have numbered steps of at most 25 words,
  each naming the code that does it;
- no sentence runs over 40 words, and the median sentence is under 20;
- the layer tables agree with ``CORE_LAYERS`` and ``SERVER_LAYERS`` of test_architecture.py;
- every module of ``budgetlens_lsp/features/`` is in the feature table, with its kind;
- every package of the core is named;
- the "to change X, open Y" table has at least 15 rows.
"""

from __future__ import annotations

import ast
import functools
import re
import statistics
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.project.test_architecture import (
    CORE_LAYERS,
    FEATURE_MODULES,
    SERVER_LAYERS,
    SHARED_FEATURE_MODULES,
)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
MAX_STEP_WORDS = 25
MAX_SENTENCE_WORDS = 40
MAX_MEDIAN_WORDS = 20  # the median must be below this
MIN_FLOW_STEPS = 5
MIN_CHANGE_ROWS = 15
FLOWS = ("`didChange`", "`budgetlens check`")
#: Where a relative path the page writes may start (``contract/plan.py`` is in the core).
PATH_BASES = (ROOT, ROOT / "shared_core", ROOT / "shared_core" / "budgetlens", ROOT / "server",
              ROOT / "server" / "budgetlens_lsp", ROOT / "server" / "budgetlens_cli",
              ROOT / "tests")
#: Where a bare file name (``server.py``) must name a file.
FILE_HOMES = ("shared_core", "server", "tests", "scripts", "bench")
FILE_SUFFIXES = (".py", ".md", ".json", ".yaml", ".yml", ".toml", ".txt")
#: Characters of a placeholder or a pattern, not of a name (``<name>_cmd.py``, ``*.yaml``).
PATTERN_CHARS = set("*<>$~{}\"'")
#: Keys of the input files, written as key paths (``settings.injection``), not code.
FILE_KEYS = frozenset({"settings", "steps", "user_parts", "serving", "metadata"})
#: A part of a name in lower camel case is the protocol's or a client's (``source.fixAll``).
CAMEL = re.compile(r"[a-z][a-z0-9]*[A-Z]")
CODE_SPAN = re.compile(r"`([^`]+)`")
DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


# ------------------------------------------------------------------------------ the code
def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for base in (ROOT / "shared_core", ROOT / "server"):
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


@functools.cache
def _names(module: str) -> dict[str, ast.AST | None]:
    """The top-level names of ``module``: a class, a function, or None (a value, an import)."""
    tree = ast.parse(MODULES[module].read_text("utf-8"))
    return _defined(tree.body)


def _defined(body: list[ast.stmt]) -> dict[str, ast.AST | None]:
    names: dict[str, ast.AST | None] = {}
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            names.update((t.id, None) for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(((a.asname or a.name).split(".")[0], None) for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            names.update(_defined(node.body))
    return names


def _resolves_in(module: str, parts: list[str]) -> bool:
    """Whether ``parts`` are submodules of ``module``, then names defined in it (a class's
    attributes after a class; anything after a value or an import)."""
    while parts and f"{module}.{parts[0]}" in MODULES:
        module = f"{module}.{parts.pop(0)}"
    scope: Mapping[str, ast.AST | None] = _names(module)
    for part in parts:
        if part not in scope:
            return False
        node = scope[part]
        if not isinstance(node, ast.ClassDef):
            return True
        scope = {**_defined(node.body), **_instance_attributes(node)}
    return True


def _instance_attributes(cls: ast.ClassDef) -> dict[str, ast.AST | None]:
    """The ``self.NAME = ...`` of a class's methods."""
    return {target.attr: None for node in ast.walk(cls)
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == "self"}


@functools.cache
def _classes() -> dict[str, list[str]]:
    """Top-level class name -> the modules defining one."""
    out: dict[str, list[str]] = {}
    for module in MODULES:
        for name, node in _names(module).items():
            if isinstance(node, ast.ClassDef):
                out.setdefault(name, []).append(module)
    return out


def code_name(token: str) -> bool | None:
    """Whether a dotted name resolves in the project; None when it is not the project's
    (``os.replace``): its first part is no module, package or class of the project."""
    parts = token.split(".")
    first, rest = parts[0], parts[1:]
    homes = [m for m in MODULES if m == first or m.endswith("." + first)]
    owners = _classes().get(first, [])
    if not homes and not owners:
        return None
    return any(_resolves_in(m, list(rest)) for m in homes) or any(
        _resolves_in(m, [first, *rest]) for m in owners)


def path_name(token: str) -> bool | None:
    """Whether a path resolves under one of ``PATH_BASES``; None when the token is not a path
    of the repository (``textDocument/didChange``)."""
    bare = token.rstrip("/")
    if "/" not in token:
        if not token.endswith(".py"):
            return None
        return any(next((ROOT / home).rglob(token), None) for home in FILE_HOMES)
    first = bare.split("/")[0]
    looks_like_path = token.endswith("/") or token.endswith(FILE_SUFFIXES) or any(
        (base / first).is_dir() for base in PATH_BASES)
    if not looks_like_path:
        return None
    return any((base / bare).exists() for base in PATH_BASES)


def reference(token: str) -> bool | None:
    """Whether a backticked token names something that exists; None when it names nothing
    of the repository (a command line, an option, a key, a file of the user's)."""
    token = token.split("(", 1)[0].strip()
    if not token or any(c.isspace() for c in token) or token.startswith(("-", ".")) \
            or PATTERN_CHARS & set(token):
        return None
    if "/" in token or token.endswith(".py"):
        return path_name(token)
    if token.endswith(FILE_SUFFIXES) or not DOTTED.fullmatch(token):
        return None
    parts = token.split(".")
    if parts[0] in FILE_KEYS or any(CAMEL.match(part) for part in parts):
        return None
    return code_name(token)


# ------------------------------------------------------------------------------ the text
def _prose_lines(text: str) -> Iterator[str]:
    """Every line outside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def name_problems(text: str) -> list[str]:
    """Every backticked path or code name of the project that does not exist."""
    return [f"`{token}` names nothing that exists"
            for line in _prose_lines(text) for token in CODE_SPAN.findall(line)
            if reference(token) is False]


def _plain(text: str) -> str:
    """Code spans as one word each, links as their text, abbreviations without dots."""
    text = CODE_SPAN.sub("CODE", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"\b(e\.g|i\.e|etc)\.", lambda m: m.group(1).replace(".", ""), text)


def words(text: str) -> int:
    return sum(1 for w in _plain(text).split() if any(c.isalnum() for c in w))


def _blocks(text: str) -> Iterator[str]:
    """The prose of the page: paragraphs, list items and table cells, one block each
    (headings and code left out)."""
    current: list[str] = []
    for line in _prose_lines(text):
        stripped = line.strip()
        item = re.match(r"(- |\d+\. )(.*)", stripped)
        if not stripped or stripped.startswith(("#", "|")) or item:
            if current:
                yield " ".join(current)
            current = []
        if stripped.startswith("|"):
            if not re.fullmatch(r"[|\s:-]+", stripped):
                yield from (cell for cell in CODE_SPAN.sub("CODE", stripped).split("|")
                            if cell.strip())
        elif item:
            current = [item.group(2)]
        elif stripped and not stripped.startswith("#"):
            current.append(stripped)
    if current:
        yield " ".join(current)


def sentences(text: str) -> list[str]:
    return [s for block in _blocks(text)
            for s in re.split(r"(?<=[.!?])\s+", _plain(block)) if words(s)]


def sentence_problems(text: str) -> list[str]:
    found = sentences(text)
    problems = [f"{words(s)} words: {s[:60]}..." for s in found
                if words(s) > MAX_SENTENCE_WORDS]
    median = statistics.median(words(s) for s in found) if found else 0
    if median >= MAX_MEDIAN_WORDS:
        problems.append(f"the median sentence has {median} words (under {MAX_MEDIAN_WORDS})")
    return problems


# ------------------------------------------------------------------------------ the flows
def _section(text: str, title_part: str) -> list[str] | None:
    """The lines of the ``##`` section whose title holds ``title_part``, else None."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("## ") and title_part in line:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("## ")),
                       len(lines))
            return lines[i + 1:end]
    return None


def _numbered(lines: list[str]) -> list[str]:
    steps: list[str] = []
    for line in lines:
        if re.match(r"\d+\. ", line):
            steps.append(line.split(". ", 1)[1])
        elif steps and line.startswith("   ") and line.strip():
            steps[-1] += " " + line.strip()
    return steps


def flow_problems(text: str) -> list[str]:
    problems = []
    for flow in FLOWS:
        lines = _section(text, flow)
        if lines is None:
            problems.append(f"no section for the flow of {flow}")
            continue
        steps = _numbered(lines)
        if len(steps) < MIN_FLOW_STEPS:
            problems.append(f"the flow of {flow} has {len(steps)} numbered steps")
        for n, step in enumerate(steps, 1):
            if words(step) > MAX_STEP_WORDS:
                problems.append(f"{flow} step {n} has {words(step)} words")
            if not any(reference(t) for t in CODE_SPAN.findall(step)):
                problems.append(f"{flow} step {n} names no module or function")
    return problems


# ------------------------------------------------------------------------------ the tables
def _table_rows(text: str, header: str) -> list[list[list[str]]]:
    """Each table whose header row starts with ``header``: its rows, as cells."""
    tables: list[list[list[str]]] = []
    rows: list[list[str]] | None = None
    for line in _prose_lines(text):
        stripped = line.strip()
        if not stripped.startswith("|"):
            rows = None
            continue
        cells = [c.strip() for c in stripped.strip("|").split("|")]
        if rows is None:
            rows = []
            if stripped.replace(" ", "").startswith(header.replace(" ", "")):
                tables.append(rows)
            continue
        if not re.fullmatch(r"[|\s:-]+", stripped):
            rows.append(cells)
    return tables


def _layer_of(module: str, layers: Mapping[str, int]) -> int | None:
    while True:
        if module in layers:
            return layers[module]
        if "." not in module:
            return None
        module = module.rsplit(".", 1)[0]


def _shown(value: int) -> str:
    """How the page writes a layer of the test (10, 11 and 12 are 1; 15 is 1.5; 25 is 2.5)."""
    half = value // 5 / 2
    return str(int(half)) if half == int(half) else str(half)


def _table_module(package: str, token: str) -> str:
    if token == f"{package}/__init__.py":
        return package
    return f"{package}.{token.rstrip('/')}"


def layer_problems(text: str, package: str, layers: Mapping[str, int], which: int) -> list[str]:
    """The ``which``-th layer table against ``layers``: each module named is a module in the
    layer the table gives it, ``→`` goes up, and every key of ``layers`` is named."""
    tables = _table_rows(text, "| layer | modules |")
    if len(tables) <= which:
        return [f"no layer table number {which + 1} for {package}"]
    problems, named = [], set()
    for row in tables[which]:
        previous = -1
        for group in row[1].split("→"):
            values = set()
            for token in CODE_SPAN.findall(group):
                module = _table_module(package, token)
                named.add(module)
                value = _layer_of(module, layers)
                if module not in MODULES or value is None:
                    problems.append(f"`{token}` is no module of a layer")
                    continue
                values.add(value)
                if _shown(value) != row[0]:
                    problems.append(f"`{token}` is in layer {_shown(value)}, not {row[0]}")
            if values and min(values) <= previous:
                problems.append(f"`→` before {group.strip()} does not go up a layer")
            previous = max(values, default=previous)
    problems += [f"{key} is missing from the layer table" for key in layers if key not in named]
    return problems


def feature_problems(text: str, files: set[str]) -> list[str]:
    tables = _table_rows(text, "| module | kind |")
    if not tables:
        return ["no feature table"]
    kinds = {CODE_SPAN.sub(r"\1", row[0]): row[1] for row in tables[0]}
    problems = [f"features/{name}.py is not in the feature table"
                for name in sorted(files - set(kinds))]
    problems += [f"`{name}` is in the feature table but not in features/"
                 for name in sorted(set(kinds) - files)]
    for name, kind in sorted(kinds.items()):
        actual = "feature" if name in FEATURE_MODULES else \
            "shared" if name in SHARED_FEATURE_MODULES else None
        if actual is not None and kind != actual:
            problems.append(f"`{name}` is a {actual} module, not {kind}")
    return problems


def package_problems(text: str, packages: list[str]) -> list[str]:
    return [f"the core package {name}/ is not named" for name in packages
            if f"`{name}/`" not in text and f"`budgetlens.{name}`" not in text]


def change_table_problems(text: str) -> list[str]:
    tables = _table_rows(text, "| to change | open |")
    rows = len(tables[0]) if tables else 0
    return [] if rows >= MIN_CHANGE_ROWS else [f"the 'to change' table has {rows} rows"]


# ------------------------------------------------------------------ each rule, on a bad page
def test_names_that_do_not_exist_are_found() -> None:
    good = ("`shared_core/budgetlens/codes.py`, `contract/plan.py`, `features/`, `server.py`,"
            " `contract.cache.BudgetCache.store_report`, `Snapshot.superseded`,"
            " `main.SUBCOMMAND_HELP`, `budgetlens_lsp.serve`, `os.replace`, `config.json`,"
            " `textDocument/didChange`, `<name>_cmd.py`, `budgetlens check`, `--jobs`,"
            " `WorkspaceIndex.backlog`, `settings.injection`, `source.fixAll.budgetlens`,"
            " `.budgetlens_cache/`\n")
    assert name_problems(good) == []
    bad = ("`shared_core/budgetlens/nowhere.py` `contract/nowhere/` `gone.py`"
           " `contract.cache.NoSuchCache` `Snapshot.nothing` `session.Session.fly`"
           " `WorkspaceIndex.backlogs`\n")
    assert name_problems(bad) == [
        f"`{t}` names nothing that exists" for t in (
            "shared_core/budgetlens/nowhere.py", "contract/nowhere/", "gone.py",
            "contract.cache.NoSuchCache", "Snapshot.nothing", "session.Session.fly",
            "WorkspaceIndex.backlogs")]
    assert name_problems("```\n`gone.py`\n```\n") == []  # code blocks are not prose


def test_long_sentences_and_a_long_median_are_found() -> None:
    assert sentence_problems("A short one. Another `x.y` here, e.g. this.\n") == []
    long = " ".join(["word"] * 41) + "."
    assert sentence_problems(f"Short.\n\n{long}\n\nShort too.\n") == [
        f"41 words: {long[:60]}..."]
    assert sentence_problems("| a | " + " ".join(["w"] * 41) + " |\n") != []
    twenty = " ".join(["w"] * 20) + "."
    assert sentence_problems(f"{twenty} {twenty}\n\nShort.\n") == [
        "the median sentence has 20 words (under 20)"]


def _page(check_steps: list[str], lsp_steps: list[str]) -> str:
    def numbered(steps: list[str]) -> str:
        return "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
    return (f"# Map\n\n## From `didChange` to diagnostics\n\n{numbered(lsp_steps)}\n\n"
            f"## From `budgetlens check` to status\n\n{numbered(check_steps)}\n")


def test_flow_steps_too_long_or_naming_no_code_are_found() -> None:
    step = "`session.Session.change` applies the edit."
    assert flow_problems(_page([step] * 5, [step] * 5)) == []
    wordy = step + " It" + " then" * 20 + " rests."
    vague = "Something happens somewhere."
    assert flow_problems(_page([step] * 4 + [wordy], [vague] + [step] * 4)) == [
        "`didChange` step 1 names no module or function",
        "`budgetlens check` step 5 has 26 words"]
    assert flow_problems("## From `didChange` to x\n\n1. `session.Session.change` does.\n") == [
        "the flow of `didChange` has 1 numbered steps",
        "no section for the flow of `budgetlens check`"]
    unknown = "`session.Session.fly` flies."
    assert flow_problems(_page([step] * 5, [unknown] + [step] * 4)) == [
        "`didChange` step 1 names no module or function"]


LAYERS = {"pkg": 50, "pkg.a": 10, "pkg.b": 10, "pkg.c": 11, "pkg.d": 15, "pkg.e": 20}


def _layer_page(rows: str) -> str:
    return f"| layer | modules | owns |\n|---|---|---|\n{rows}"


def test_layer_tables_that_disagree_with_the_test_are_found(monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    monkeypatch.setattr(sys.modules[__name__], "MODULES", dict.fromkeys(LAYERS, Path()))
    good = _layer_page("| 1 | `a`, `b` → `c` | x |\n| 1.5 | `d` | y |\n| 2 | `e` | z |\n"
                       "| 5 | `pkg/__init__.py` | api |\n")
    assert layer_problems(good, "pkg", LAYERS, 0) == []
    bad = _layer_page("| 1 | `c` → `a` | x |\n| 2 | `d`, `e`, `f` | y |\n")
    assert layer_problems(bad, "pkg", LAYERS, 0) == [
        "`→` before `a` does not go up a layer",
        "`d` is in layer 1.5, not 2",
        "`f` is no module of a layer",
        "pkg is missing from the layer table",
        "pkg.b is missing from the layer table"]
    assert layer_problems(good, "pkg", LAYERS, 1) == ["no layer table number 2 for pkg"]


def test_a_feature_table_that_disagrees_with_the_folder_is_found() -> None:
    table = ("| module | kind | does |\n|---|---|---|\n| `hover` | feature | h |\n"
             "| `state` | feature | s |\n| `gadget` | shared | g |\n")
    assert feature_problems(table, {"hover", "state", "lenses"}) == [
        "features/lenses.py is not in the feature table",
        "`gadget` is in the feature table but not in features/",
        "`state` is a shared module, not feature"]
    assert feature_problems("no table\n", {"hover"}) == ["no feature table"]


def test_an_unnamed_core_package_and_a_short_change_table_are_found() -> None:
    assert package_problems("`tokens/` and `budgetlens.models`", ["tokens", "models"]) == []
    assert package_problems("`tokens/`", ["tokens", "assembly"]) == [
        "the core package assembly/ is not named"]
    rows = "".join(f"| x{i} | `y` |\n" for i in range(14))
    assert change_table_problems(f"| to change | open |\n|---|---|\n{rows}") == [
        "the 'to change' table has 14 rows"]
    assert change_table_problems(
        f"| to change | open |\n|---|---|\n{rows}| x | `y` |\n") == []


# ------------------------------------------------------------------------------ the page
def test_every_name_on_the_page_exists() -> None:
    assert name_problems(DOC.read_text("utf-8")) == []


def test_the_page_reads_in_short_sentences() -> None:
    assert sentence_problems(DOC.read_text("utf-8")) == []


def test_the_two_flows_are_short_steps_naming_their_code() -> None:
    assert flow_problems(DOC.read_text("utf-8")) == []


def test_the_layer_tables_agree_with_the_architecture_test() -> None:
    text = DOC.read_text("utf-8")
    assert layer_problems(text, "budgetlens", CORE_LAYERS, 0) == []
    assert layer_problems(text, "budgetlens_lsp", SERVER_LAYERS, 1) == []


def test_every_feature_module_is_in_the_feature_table() -> None:
    folder = ROOT / "server" / "budgetlens_lsp" / "features"
    files = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    assert files  # guards the rule: an empty folder would pass it vacuously
    assert feature_problems(DOC.read_text("utf-8"), files) == []


def test_every_core_package_is_named() -> None:
    core = ROOT / "shared_core" / "budgetlens"
    packages = sorted(p.parent.name for p in core.glob("*/__init__.py"))
    assert len(packages) >= 8
    assert package_problems(DOC.read_text("utf-8"), packages) == []


def test_the_change_table_has_enough_rows() -> None:
    assert change_table_problems(DOC.read_text("utf-8")) == []
