"""The architecture of docs/architecture.md holds: the import graph and the size of functions.

Every ``.py`` under ``shared_core/`` and ``server/`` is parsed with :mod:`ast` (nothing is
imported). ALL imports count: module level, inside functions, and under ``if TYPE_CHECKING:``;
an import that exists only to dodge a cycle is still an edge of the graph.

The layers are written out here by hand, from the plan (docs/architecture.md): a module may import
modules of its own layer or of lower layers, never a higher one, and no import cycle may exist.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {"budgetlens": ROOT / "shared_core", "budgetlens_lsp": ROOT / "server",
           "budgetlens_cli": ROOT / "server"}
MAX_FUNCTION_LINES = 60
LONG_FUNCTION_MARK = "# long-function:"

# The core's layers, lowest first. A key is a module or a package (every module below it).
CORE_LAYERS: dict[str, int] = {
    # 1. shared infrastructure: source, codes, serialize, enums -> files -> writes
    "budgetlens.source": 10, "budgetlens.codes": 10, "budgetlens.serialize": 10,
    "budgetlens.usercache": 10,
    "budgetlens.enums": 10,
    "budgetlens.files": 11,
    "budgetlens.writes": 12,
    # 2.
    "budgetlens.tokens": 20, "budgetlens.yamldoc": 20, "budgetlens.models": 20,
    # 3.
    "budgetlens.continuation": 30, "budgetlens.assembly": 30, "budgetlens.formats": 30,
    # 4. (may import assembly for the unified budget)
    "budgetlens.contract": 40,
    # request time: one request fitted with the registry's and a checked step's limits
    "budgetlens.request": 40,
    # 5. the public API: budgetlens/__init__.py itself
    "budgetlens": 50,
}
# The server's layers, lowest first.
SERVER_LAYERS: dict[str, int] = {
    # the package itself holds nothing but __version__
    "budgetlens_lsp": 0,
    # 1. conversion and settings (the core only); the JSON-RPC life cycle and standard
    # input read by the event loop (pygls only)
    "budgetlens_lsp.convert": 10, "budgetlens_lsp.settings": 10, "budgetlens_lsp.protocol": 10,
    "budgetlens_lsp.stdio": 10,
    # 1.5 symbolic links: which names lead to which files (the index's bookkeeping)
    "budgetlens_lsp.links": 15,
    # 2. analysis over the core, returns plain data, imports no feature
    "budgetlens_lsp.workspace_index": 20,
    # 2.5 what an analysis hands to the session; when it is held or forced
    "budgetlens_lsp.scheduling": 25,
    # 3. documents, versions, settings, scheduling; analysis and publishing injected
    "budgetlens_lsp.session": 30,
    # 4. the features, each owning its publishing / refresh
    "budgetlens_lsp.features": 40,
    # 5. registration and start-up
    "budgetlens_lsp.server": 50, "budgetlens_lsp.serve": 50, "budgetlens_lsp.__main__": 50,
}
CORE_FORBIDDEN = ("budgetlens_lsp", "budgetlens_cli", "pygls", "lsprotocol", "socket", "http",
                  "asyncio")
CLI_MAY_IMPORT_FROM_SERVER = ("budgetlens_lsp.serve",)


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (a project module when one matches, else as written)
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} (line {self.line})"


def _module_files() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for top, base in SOURCES.items():
        for path in sorted((base / top).rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


MODULES = _module_files()


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _resolve(name: str) -> str:
    """The project module ``name`` denotes, or ``name`` itself for a foreign module."""
    while name and name not in MODULES:
        if "." not in name:
            return name
        name = name.rsplit(".", 1)[0]
    return name


def _imports_of(module: str) -> Iterator[Import]:
    path = MODULES[module]
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    package = module if _is_package(module) else module.rpartition(".")[0]
    for node in ast.walk(tree):  # every node: function bodies and TYPE_CHECKING blocks too
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, _resolve(alias.name), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                origin = node.module or ""
            for alias in node.names:
                # ``from pkg import sub`` imports the submodule ``pkg.sub`` when there is one
                candidate = f"{origin}.{alias.name}"
                target = candidate if candidate in MODULES else _resolve(origin)
                yield Import(module, target, node.lineno)


IMPORTS = list(dict.fromkeys(imp for module in MODULES for imp in _imports_of(module)))
INTERNAL = [imp for imp in IMPORTS if imp.target in MODULES]


def _top(module: str) -> str:
    return module.split(".")[0]


def _layer(module: str, layers: dict[str, int]) -> int | None:
    name = module
    while True:
        if name in layers:
            return layers[name]
        if "." not in name:
            return None
        name = name.rsplit(".", 1)[0]


def _layer_violations(top: str, layers: dict[str, int]) -> list[str]:
    problems = [f"{m} is in no layer" for m in MODULES
                if _top(m) == top and _layer(m, layers) is None]
    for imp in INTERNAL:
        if _top(imp.source) != top or _top(imp.target) != top:
            continue
        low, high = _layer(imp.target, layers), _layer(imp.source, layers)
        if low is not None and high is not None and low > high:
            problems.append(f"{imp}: layer {high // 10} imports the higher layer {low // 10}")
    return problems


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (or a self-import): Tarjan."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in INTERNAL:
        graph[imp.source].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _edges_within(component: list[str]) -> list[str]:
    members = set(component)
    return [str(imp) for imp in INTERNAL if imp.source in members and imp.target in members]


# ------------------------------------------------------------------------------ the graph itself
def test_the_graph_sees_every_package_and_imports_inside_functions() -> None:
    # guards the rest: an empty or partial graph would make every rule below pass vacuously
    assert {"budgetlens", "budgetlens.contract", "budgetlens_lsp.server",
            "budgetlens_cli.main"} <= set(MODULES)
    assert len(MODULES) > 40
    probe = ast.parse("def f():\n    from budgetlens import codes\n"
                      "if TYPE_CHECKING:\n    import budgetlens.files\n")
    found = [n for n in ast.walk(probe) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert len(found) == 2
    assert _resolve("budgetlens.contract.check.CheckOptions") == "budgetlens.contract.check"
    assert _resolve("yaml") == "yaml"


def test_no_import_cycles_anywhere() -> None:
    cycles = _cycles()
    assert not cycles, "import cycles (modules, then the imports that close them):\n" + "\n".join(
        f"- {' <-> '.join(c)}\n    " + "\n    ".join(_edges_within(c)) for c in cycles)


# ------------------------------------------------------------------------------ the core
def test_the_core_imports_no_adapter_no_lsp_and_no_network() -> None:
    offenders = [str(imp) for imp in IMPORTS
                 if _top(imp.source) == "budgetlens" and _top(imp.target) in CORE_FORBIDDEN]
    assert not offenders, "the core imports what it must not:\n" + "\n".join(offenders)


def test_the_core_layers_import_only_downwards() -> None:
    problems = _layer_violations("budgetlens", CORE_LAYERS)
    assert not problems, "core layering broken:\n" + "\n".join(problems)


# ------------------------------------------------------------------------------ the server
def test_the_server_layers_import_only_downwards() -> None:
    problems = _layer_violations("budgetlens_lsp", SERVER_LAYERS)
    assert not problems, "server layering broken:\n" + "\n".join(problems)


def test_the_server_never_imports_the_cli() -> None:
    offenders = [str(imp) for imp in IMPORTS
                 if _top(imp.source) == "budgetlens_lsp" and _top(imp.target) == "budgetlens_cli"]
    assert not offenders, "the server imports the CLI:\n" + "\n".join(offenders)


def test_the_cli_imports_from_the_server_only_its_start_up() -> None:
    offenders = [str(imp) for imp in IMPORTS
                 if _top(imp.source) == "budgetlens_cli" and _top(imp.target) == "budgetlens_lsp"
                 and imp.target not in CLI_MAY_IMPORT_FROM_SERVER]
    assert not offenders, ("budgetlens_cli may import from budgetlens_lsp only "
                           f"{', '.join(CLI_MAY_IMPORT_FROM_SERVER)}:\n" + "\n".join(offenders))


def _unexplained_lazy_imports(text: str) -> Iterator[str]:
    """Imports of project modules inside a function with no comment on or above their line."""
    lines = text.splitlines()
    for fn in ast.walk(ast.parse(text)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif isinstance(node, ast.ImportFrom):
                names = ["(relative)"]
            else:
                continue
            if not any(n == "(relative)" or _top(n) in SOURCES for n in names):
                continue
            above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
            if "#" not in lines[node.lineno - 1] and not above.startswith("#"):
                yield f"{fn.name}:{node.lineno} imports {', '.join(names)}"


def test_a_lazy_import_of_a_project_module_says_why() -> None:
    # ARCH: no import inside a function that dodges a cycle (the cycle test sees those); a lazy
    # import for start-up speed is allowed with a comment saying so
    offenders = [f"{path.relative_to(ROOT)} {found}"
                 for base in (ROOT / "shared_core", ROOT / "server")
                 for path in sorted(base.rglob("*.py"))
                 for found in _unexplained_lazy_imports(path.read_text("utf-8"))]
    assert not offenders, ("imports of project modules inside functions without a comment "
                           "saying why (on the line or directly above):\n" + "\n".join(offenders))


# ------------------------------------------------------------------------------ function length
def _long_functions(text: str) -> Iterator[str]:
    """``name:line (n lines)`` of every function longer than the limit and not marked."""
    lines = text.splitlines()
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        assert node.end_lineno is not None
        length = node.end_lineno - node.lineno + 1
        if length <= MAX_FUNCTION_LINES:
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        # the comment block directly above the def (or its decorators) starts with the mark
        block: list[str] = []
        i = first - 2
        while i >= 0 and lines[i].strip().startswith("#"):
            block.insert(0, lines[i].strip())
            i -= 1
        if not (block and block[0].startswith(LONG_FUNCTION_MARK)):
            yield f"{node.name}:{node.lineno} ({length} lines)"


@pytest.mark.parametrize("text, expected", [
    ("def f():\n" + "    x = 1\n" * 59, []),
    ("def f():\n" + "    x = 1\n" * 60, ["f:1 (61 lines)"]),
    ("# long-function: a state machine\ndef f():\n" + "    x = 1\n" * 60, []),
    ("# long-function: decorated\n@dec\ndef f():\n" + "    x = 1\n" * 60, []),
    ("# a comment\ndef f():\n" + "    x = 1\n" * 60, ["f:2 (61 lines)"]),
    ("# long-function: a reason\n# on two lines\ndef f():\n" + "    x = 1\n" * 60, []),
    ("# a comment\n# long-function: not first\ndef f():\n" + "    x = 1\n" * 60,
     ["f:3 (61 lines)"]),
    ("class C:\n    async def m(self):\n" + "        x = 1\n" * 60, ["m:2 (61 lines)"]),
])
def test_the_length_rule_itself(text: str, expected: list[str]) -> None:
    assert list(_long_functions(text)) == expected


def test_no_function_longer_than_60_lines_unless_marked() -> None:
    offenders = [f"{path.relative_to(ROOT)} {found}"
                 for base in (ROOT / "shared_core", ROOT / "server")
                 for path in sorted(base.rglob("*.py"))
                 for found in _long_functions(path.read_text("utf-8"))]
    assert not offenders, (f"functions longer than {MAX_FUNCTION_LINES} lines without a "
                           f"'{LONG_FUNCTION_MARK} <reason>' comment directly above the def:\n"
                           + "\n".join(offenders))


# ------------------------------------------------------------------------------ module size
MAX_MODULE_LINES = 800
# Modules still over the limit, by path from the repository root. Issue 31 splits them: this
# list must shrink to empty. It cannot go stale: the test fails when a listed module is no
# longer over the limit (take it off the list then), and when it no longer exists.
OVERSIZED_FOR_NOW: frozenset[str] = frozenset()


def _module_sizes() -> dict[str, int]:
    """Lines of every module under shared_core/ and server/, by path from the root."""
    return {path.relative_to(ROOT).as_posix(): len(path.read_text("utf-8").splitlines())
            for base in (ROOT / "shared_core", ROOT / "server")
            for path in sorted(base.rglob("*.py"))}


def _size_offenders(sizes: dict[str, int], allowed: frozenset[str]) -> tuple[list[str], list[str]]:
    """Modules over the limit and not allowed; allowed modules no longer over it (or gone)."""
    over = [f"{path} ({lines} lines)" for path, lines in sorted(sizes.items())
            if lines > MAX_MODULE_LINES and path not in allowed]
    stale = [f"{path} ({sizes[path]} lines)" if path in sizes else f"{path} (missing)"
             for path in sorted(allowed) if sizes.get(path, 0) <= MAX_MODULE_LINES]
    return over, stale


@pytest.mark.parametrize("sizes, expected", [
    ({"a.py": 800, "b.py": 12, "big.py": 801}, ([], [])),
    ({"a.py": 801, "big.py": 1200}, (["a.py (801 lines)"], [])),
    ({"big.py": 800}, ([], ["big.py (800 lines)"])),
    ({}, ([], ["big.py (missing)"])),
])
def test_the_size_rule_itself(sizes: dict[str, int],
                              expected: tuple[list[str], list[str]]) -> None:
    assert _size_offenders(sizes, frozenset({"big.py"})) == expected


def test_no_module_longer_than_800_lines() -> None:
    over, stale = _size_offenders(_module_sizes(), OVERSIZED_FOR_NOW)
    assert not over, (f"modules over {MAX_MODULE_LINES} lines (split them along their "
                      "seams):\n" + "\n".join(over))
    assert not stale, ("OVERSIZED_FOR_NOW lists modules that are no longer over "
                       f"{MAX_MODULE_LINES} lines; remove them from it:\n" + "\n".join(stale))


# ------------------------------------------------------------ features and shared modules
# A feature module answers the client (server.py registers its handlers); a shared module
# holds what features have in common (see features/shared.py). A feature never imports
# another feature, and a shared module imports no feature.
FEATURE_MODULES = frozenset({
    "actions", "commands", "diagnostics", "documents", "hover", "lenses", "lifecycle", "models",
})
SHARED_FEATURE_MODULES = frozenset({"edits", "json_documents", "shared", "state", "views"})
FEATURES_PACKAGE = "budgetlens_lsp.features"


def _feature_problems(modules: list[str], imports: list[Import]) -> list[str]:
    problems = []
    for m in modules:
        if not m.startswith(FEATURES_PACKAGE + "."):
            continue
        name = m.rsplit(".", 1)[1]
        if name not in FEATURE_MODULES | SHARED_FEATURE_MODULES:
            problems.append(f"{m} is neither a feature nor a shared module (say which)")
    for imp in imports:
        source, target = imp.source.rsplit(".", 1), imp.target.rsplit(".", 1)
        if source[0] != FEATURES_PACKAGE or target[0] != FEATURES_PACKAGE:
            continue
        if source[1] != target[1] and target[1] in FEATURE_MODULES:
            kind = "feature" if source[1] in FEATURE_MODULES else "shared module"
            problems.append(f"{imp}: a {kind} imports the feature {target[1]}")
    return problems


def test_the_feature_rule_itself() -> None:
    pkg = FEATURES_PACKAGE
    modules = [f"{pkg}.hover", f"{pkg}.lenses", f"{pkg}.shared", f"{pkg}.gadget"]
    imports = [Import(f"{pkg}.hover", f"{pkg}.lenses", 3),
               Import(f"{pkg}.hover", f"{pkg}.shared", 4),
               Import(f"{pkg}.shared", f"{pkg}.hover", 5),
               Import(f"{pkg}.lenses", "budgetlens_lsp.convert", 6)]
    assert _feature_problems(modules, imports) == [
        f"{pkg}.gadget is neither a feature nor a shared module (say which)",
        f"{pkg}.hover -> {pkg}.lenses (line 3): a feature imports the feature lenses",
        f"{pkg}.shared -> {pkg}.hover (line 5): a shared module imports the feature hover"]


def test_no_feature_imports_another_feature() -> None:
    problems = _feature_problems(list(MODULES), INTERNAL)
    assert not problems, "features import each other:\n" + "\n".join(problems)


# ------------------------------------------------------------------- the analysis hand-off
# The session reads an analysis result's fields (scheduling.AnalysisResult), never probes it.
HAND_OFF_MODULES = ("budgetlens_lsp.session", "budgetlens_lsp.scheduling",
                    "budgetlens_lsp.features.diagnostics")


def _getattr_calls(text: str) -> list[int]:
    """The lines of every ``getattr(...)`` call, and of ``hasattr(...)``."""
    return [node.lineno for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")]


def test_the_getattr_rule_itself() -> None:
    assert _getattr_calls("x = 1\nmore = getattr(results, 'more', False)\n"
                          "y = hasattr(r, 'held')\n") == [2, 3]
    assert _getattr_calls("results.more\n") == []


def test_the_session_never_probes_an_analysis_result_with_getattr() -> None:
    offenders = [f"{m}:{line}" for m in HAND_OFF_MODULES if m in MODULES
                 for line in _getattr_calls(MODULES[m].read_text("utf-8"))]
    assert not offenders, ("getattr on the analysis hand-off (read AnalysisResult's "
                           "fields):\n" + "\n".join(offenders))


# ------------------------------------------------------------------ Diagnostic.data's type
def test_diagnostic_data_is_a_closed_set_of_payloads_not_a_dict() -> None:
    import types as pytypes
    import typing

    from budgetlens.source import Diagnostic

    hint = typing.get_type_hints(Diagnostic)["data"]
    kinds = [k for k in typing.get_args(hint) if k is not type(None)]
    assert kinds, f"Diagnostic.data is {hint!r}: not a union of payload classes"
    for kind in kinds:
        origin = typing.get_origin(kind) or kind
        assert kind is not typing.Any and origin not in (dict, typing.Mapping), hint
        assert isinstance(kind, type) and not issubclass(origin, (dict, list)), kind
        params = getattr(kind, "__dataclass_params__", None)
        assert params is not None and params.frozen, f"{kind!r} is not a frozen dataclass"
    assert typing.get_origin(hint) in (typing.Union, pytypes.UnionType)


# ------------------------------------------------------------------------------ CLI state
# The CLI keeps no state between two commands of one process (tests run many): a run returns
# what it did (``main.run``), it sets no module global. The rule, checked on every module of
# server/budgetlens_cli/ with ``ast``:
#
# - a module-level name may not be bound to a mutable container: a list, dict or set display
#   or comprehension, or a call of ``dict``, ``list``, ``set``, ``defaultdict``,
#   ``OrderedDict``, ``Counter``, ``deque`` or ``bytearray``;
# - no function may rebind a module-level name (``global``, or ``globals()[...] = ...``).
#
# Constants stay: strings, numbers, tuples, frozensets and read-only mappings
# (``types.MappingProxyType``). ``__all__`` is read by tools only. The exceptions below are
# listed by ``module.name`` with the reason each is state rather than a constant; the test
# fails when one of them is no longer found (then remove it).
MUTABLE_CALLS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "Counter",
                           "deque", "bytearray"})
CLI_STATE_ALLOWED = {
    "budgetlens_cli.check_run._FORK_CHECKER":
        "a forked worker inherits the parent's warm checker through a module global only;"
        " set for the workers' start, reset right after",
    "budgetlens_cli.cache.globals()":
        "the names of cache_store, imported on first use (start-up speed), kept as module"
        " attributes like any import",
    "budgetlens_cli.cache._opened":
        "not yet a return value: the result caches a command opened, freed by forget_opened"
        " after the answer is recorded (begin_run empties it)",
    "budgetlens_cli.cache_store._NAMES": "memo: a result class -> its name in _CLASSES",
    "budgetlens_cli.cache_store._LOADED": "memo: a name in _CLASSES -> its class, once imported",
    "budgetlens_cli.cache_store._FIELDS": "memo: a result class -> its field names",
    "budgetlens_cli.cache_store._DATACLASSES": "memo: a dataclass by name, to decode entries",
}


def _top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run when the module is imported (inside ``if`` and ``try`` too)."""
    for node in body:
        if isinstance(node, (ast.If, ast.Try)):
            yield from _top_statements(node.body)
            yield from _top_statements(node.orelse)
            if isinstance(node, ast.Try):
                for handler in node.handlers:
                    yield from _top_statements(handler.body)
                yield from _top_statements(node.finalbody)
        else:
            yield node


def _is_mutable(value: ast.expr) -> bool:
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp,
                          ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = (func.id if isinstance(func, ast.Name)
                else func.attr if isinstance(func, ast.Attribute) else "")
        return name in MUTABLE_CALLS
    return False


def _module_state(module: str, text: str) -> Iterator[str]:
    """``module.name`` of every module-level mutable global of ``text`` (see above)."""
    tree = ast.parse(text)
    for node in _top_statements(tree.body):
        if isinstance(node, ast.Assign) and _is_mutable(node.value):
            targets: list[ast.expr] = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None \
                and _is_mutable(node.value):
            targets = [node.target]
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id != "__all__":
                yield f"{module}.{target.id}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            yield from (f"{module}.{name}" for name in node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "globals":
            yield f"{module}.globals()"


@pytest.mark.parametrize("text, expected", [
    ("A = (1, 2)\nB = frozenset({1})\nC = MappingProxyType({1: 2})\n__all__ = ['x']\n", []),
    ("CACHE = {}\n", ["m.CACHE"]),
    ("seen: list[int] = []\n", ["m.seen"]),
    ("if X:\n    S = set()\n", ["m.S"]),
    ("T = {c: 1 for c in 'ab'}\nD = collections.defaultdict(list)\n", ["m.T", "m.D"]),
    ("LAST = None\ndef f():\n    global LAST\n    LAST = 1\n", ["m.LAST"]),
    ("def f():\n    globals()['x'] = 1\n", ["m.globals()"]),
    ("def f():\n    seen = []\n", []),
])
def test_the_cli_state_rule_itself(text: str, expected: list[str]) -> None:
    assert list(_module_state("m", text)) == expected


def test_the_cli_keeps_no_module_level_mutable_global() -> None:
    found = {name for module, path in MODULES.items() if _top(module) == "budgetlens_cli"
             for name in _module_state(module, path.read_text("utf-8"))}
    offenders = sorted(found - set(CLI_STATE_ALLOWED))
    stale = sorted(set(CLI_STATE_ALLOWED) - found)
    assert not offenders, ("module-level mutable globals in the CLI (return the value, or make"
                           " it a constant):\n" + "\n".join(offenders))
    assert not stale, "CLI_STATE_ALLOWED lists what is gone; remove it:\n" + "\n".join(stale)
