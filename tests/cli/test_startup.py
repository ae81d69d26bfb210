"""Start-up imports only what it needs: ``import budgetlens`` loads no submodule, the CLI's
``--version``/``--help`` no subcommand module, a cached ``check`` no checker (counted in
``sys.modules`` of a fresh interpreter, never timed)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import budgetlens
from budgetlens_cli.main import SUBCOMMAND_HELP, SUBCOMMANDS, build_parser, chosen_subcommand

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HEAVY = ("pydantic", "yaml", "tiktoken", "regex")
# the 35 public names the package has always exported, written out by hand
PUBLIC = {
    "BudgetCache", "Case", "CheckOptions", "ClampPlan", "ClampValues", "ContinuationResult",
    "Diagnostic", "DiskFiles", "HistoryTrim", "InjectionPlan", "InjectionRequest", "Iteration",
    "JsonContexts", "MergeResult", "ModelReplyError", "Outcome", "PackResult",
    "PipelineReport", "TokenCounter", "TokenizerError", "TokenizerLike", "UnifiedBudget",
    "UnifiedContextBudgetPolicy", "apply_plan", "check_pipeline", "clamp_plan",
    "compute_unified_budget", "continue_json", "continue_json_async", "get_contexts",
    "get_tokenizer", "merge_with_overlap", "pack_context", "plan_injection", "trim_history",
    # request time (docs/runtime.md, "Fitting a request")
    "Breakdown", "ChatCall", "ChatContinuationResult", "RequestCount", "RequestDoesNotFit",
    "RequestFit", "check_request", "continue_json_chat", "continue_json_chat_async",
    "count_request", "fit_request", "read_reply", "stopped_at_length"}


def _modules_after(code: str, cwd: Path | None = None,
                   env: dict[str, str] | None = None) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; the loaded modules (and what it printed) after."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    *printed, last = proc.stdout.splitlines()
    return {"modules": set(json.loads(last)), "printed": printed, "stderr": proc.stderr}


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


def test_import_budgetlens_loads_no_submodule_and_no_library() -> None:
    got = _modules_after("import budgetlens\nprint(budgetlens.__version__)")
    modules = got["modules"]
    assert isinstance(modules, set)
    assert _heavy(modules) == []
    assert sorted(m for m in modules if m.startswith("budgetlens.")) == []
    assert got["printed"] == [budgetlens.__version__]


def test_each_name_loads_its_module_on_first_use() -> None:
    got = _modules_after("import budgetlens\nbudgetlens.get_tokenizer\n"
                         "import sys\nprint('tiktoken' in sys.modules, 'yaml' in sys.modules)\n"
                         "budgetlens.check_pipeline\nprint('yaml' in sys.modules)")
    # get_tokenizer's module loads tiktoken only with the first encoding
    assert got["printed"] == ["False False", "True"]


def test_the_public_names_all_resolve_and_stay_listed() -> None:
    assert set(budgetlens.__all__) == PUBLIC and len(budgetlens.__all__) == 48
    assert set(dir(budgetlens)) >= PUBLIC
    for name in PUBLIC:
        assert getattr(budgetlens, name) is not None
    from budgetlens.contract.check import check_pipeline
    from budgetlens.tokens.core import get_tokenizer
    assert budgetlens.check_pipeline is check_pipeline
    assert budgetlens.get_tokenizer is get_tokenizer
    namespace: dict[str, object] = {}
    exec("from budgetlens import *", namespace)
    assert set(namespace) >= PUBLIC


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        budgetlens.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:  # pragma: no cover - the failure
        raise AssertionError("no AttributeError")


def test_version_and_help_import_no_subcommand_and_no_library() -> None:
    for argv in (["--version"], ["--help"]):
        got = _modules_after("import contextlib, io\nfrom budgetlens_cli.main import main\n"
                             "with contextlib.redirect_stdout(io.StringIO()):\n"
                             f"    assert main({argv!r}) == 0\n")
        modules = got["modules"]
        assert isinstance(modules, set)
        assert _heavy(modules) == [], argv
        assert sorted(m for m in modules if m.endswith("_cmd")) == [], argv


def test_a_subcommand_run_imports_only_its_module() -> None:
    got = _modules_after("import contextlib, io\nfrom budgetlens_cli.main import main\n"
                         "with contextlib.redirect_stdout(io.StringIO()):\n"
                         "    main(['merge', '--help'])\n")
    modules = got["modules"]
    assert isinstance(modules, set)
    assert sorted(m for m in modules if m.endswith("_cmd")) == ["budgetlens_cli.merge_cmd"]


def test_a_cached_check_loads_no_checker_no_model_and_no_library(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETLENS_")}
    run = ("import contextlib, io\nfrom budgetlens_cli.main import main\n"
           "with contextlib.redirect_stdout(io.StringIO()):\n    print(main(['check', 'ws']))\n")
    first = _modules_after(run, cwd=tmp_path, env=env)["modules"]
    assert isinstance(first, set) and "budgetlens.contract.check" in first
    second = _modules_after(run, cwd=tmp_path, env=env)["modules"]
    assert isinstance(second, set)
    # the examples have an error: its text output (display widths) loads no model either
    assert {"budgetlens.contract.check", "budgetlens.contract.results",
            "budgetlens.contract.config"} & second == set()
    assert _heavy(second) == []


def test_a_check_of_pipelines_loads_no_prompt_file_reader(tmp_path: Path) -> None:
    # the format readers and their template libraries (Jinja2, Handlebars, mustache) load only
    # when a prompt file in its own format is checked
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETLENS_")}
    run = ("import contextlib, io\nfrom budgetlens_cli.main import main\n"
           "with contextlib.redirect_stdout(io.StringIO()):\n"
           "    print(main(['check', 'ws', '--no-cache']))\n")
    modules = _modules_after(run, cwd=tmp_path, env=env)["modules"]
    assert isinstance(modules, set) and "budgetlens.contract.check" in modules
    readers = ("budgetlens.formats", "budgetlens.contract.prompt_plan", "jinja2", "chevron",
               "dotpromptz_handlebars")
    assert sorted(m for m in modules if m.split(".")[0] in readers or m in readers
                  or m.startswith("budgetlens.formats.")) == []
    (tmp_path / "ws" / "a.prompt.yml").write_text(
        "model: openai/gpt-4o-mini\nmessages:\n  - role: user\n    content: hi\n", "utf-8")
    modules = _modules_after(run, cwd=tmp_path, env=env)["modules"]
    assert isinstance(modules, set) and "budgetlens.contract.prompt_plan" in modules


def test_the_help_table_says_what_each_module_registers() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    registered = {a.dest: a.help for a in sub._choices_actions}
    assert registered == SUBCOMMAND_HELP
    assert tuple(SUBCOMMAND_HELP) == SUBCOMMANDS


def test_the_chosen_subcommand_is_the_first_word() -> None:
    assert chosen_subcommand(["check", "--format", "json", "x"]) == "check"
    assert chosen_subcommand(["--version"]) == ""
    assert chosen_subcommand(["-h", "clamp"]) == "clamp"
    assert chosen_subcommand(["nope"]) == ""
    assert chosen_subcommand([]) == ""


#: A ``check`` of ``ws`` in a fresh interpreter, its text output swallowed (``{more}``: more
#: arguments, ``{after}``: code run after it).
_CHECK_RUN = ("import contextlib, io\nfrom budgetlens_cli.main import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              "    code = main(['check', 'ws', '--no-cache'{more}])\n"
              "{after}")


def _checked_modules(ws_parent: Path, more: str = "", after: str = "print(code)\n"
                     ) -> dict[str, object]:
    """The modules (and what was printed) after a ``check`` of ``ws_parent / "ws"``, with
    no ``BUDGETLENS_`` setting of the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETLENS_")}
    return _modules_after(_CHECK_RUN.format(more=more, after=after), cwd=ws_parent, env=env)


_EXIT_WATCH = """
import gc, os, sys, weakref
from budgetlens_cli import main as cli
{patch}
sys.argv = ["budgetlens", "check", "ws"]
code = cli.main()  # the process's own command line: what is alive is frozen for the exit
from budgetlens.tokens import core
tokenizer = core.get_tokenizer("cl100k_base")
assert tokenizer.loaded, "the check built no encoding"
def freed(ref, write=os.write):
    write(2, b"encoding freed\\n")
watch = [weakref.ref(tokenizer._built, freed)]  # the weakref lives on, frozen, to see it
watch.append(watch)
del tokenizer
gc.freeze()
print("exit", code)
"""


def _exit_watched(ws_parent: Path, patch: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETLENS_")}
    env["BUDGETLENS_NO_CACHE"] = "1"  # no count kept from an earlier run: the encoding builds
    return subprocess.run([sys.executable, "-c", _EXIT_WATCH.format(patch=patch)],
                          capture_output=True, text=True, cwd=ws_parent, env=env, timeout=120)


def test_a_built_encoding_is_not_freed_one_rank_at_a_time_at_exit(tmp_path: Path) -> None:
    # freeing cl100k_base's 100,000 ranks as the modules are cleared costs about 19 ms of a
    # one-pipeline check (docs/performance.md): the process ends with the encoding alive
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    kept = _exit_watched(tmp_path)
    assert kept.stdout.splitlines()[-1] == "exit 1", kept.stderr  # the examples have an error
    assert "encoding freed" not in kept.stderr
    # the watch sees a freed encoding: with nothing kept, clearing the modules frees it
    plain = _exit_watched(tmp_path, "cli._kept_tokenizers = lambda: []")
    assert plain.stdout.splitlines()[-1] == "exit 1", plain.stderr
    assert "encoding freed" in plain.stderr


def test_a_check_without_a_model_reads_no_registry_and_no_gateway_table(
        tmp_path: Path) -> None:
    # the bundled registry (and corrections.json) is read on first use: about 25 M
    # instructions of a one-pipeline check (docs/performance.md)
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    after = ("from budgetlens.models import registry\n"
             "print(code, registry.load_registry.cache_info().currsize)\n")
    plain = _checked_modules(tmp_path, after=after)
    assert plain["printed"] == ["1 0"]
    assert "budgetlens.models.gateways" not in plain["modules"]  # no gateway, no variant
    config = tmp_path / "ws" / "config.json"
    config.write_text(config.read_text("utf-8").replace(
        "{", '{"model": "gpt-4o", "gateway": "github-models",', 1), "utf-8")
    named = _checked_modules(tmp_path, after=after)
    assert named["printed"] == ["1 1"]
    assert "budgetlens.models.gateways" in named["modules"]


def test_a_check_without_tools_or_a_schema_loads_no_request_framing(tmp_path: Path) -> None:
    # the chat framings count a step's tools and response schema, and load with the first
    # step that has one
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    modules = _checked_modules(tmp_path)["modules"]
    assert isinstance(modules, set) and "budgetlens.contract.check" in modules
    assert sorted(m for m in modules if m.startswith("budgetlens.request")) == []
    chat = tmp_path / "ws" / "pipelines" / "chat.yaml"
    text = chat.read_text("utf-8")
    assert "    type: call_model\n" in text
    chat.write_text(text.replace(
        "    type: call_model\n",
        "    type: call_model\n    tools: [{type: function, function: {name: f}}]\n", 1),
        "utf-8")
    modules = _checked_modules(tmp_path)["modules"]
    assert isinstance(modules, set) and "budgetlens.request.framing" in modules


def test_a_text_check_loads_neither_xml_nor_the_rule_texts(tmp_path: Path) -> None:
    # ElementTree writes the JUnit output, the rule texts give SARIF its help addresses
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    modules = _checked_modules(tmp_path)["modules"]
    assert isinstance(modules, set) and "budgetlens.contract.check" in modules
    assert sorted(m for m in modules if m.split(".")[0] == "xml" or m == "budgetlens.rules") \
        == []
    for fmt, loaded in (("junit", "xml.etree.ElementTree"), ("sarif", "budgetlens.rules")):
        more = f", '--format', '{fmt}'"
        modules = _checked_modules(tmp_path, more=more)["modules"]
        assert isinstance(modules, set) and loaded in modules


def test_a_check_without_a_margin_percentage_loads_no_fractions(tmp_path: Path) -> None:
    # fractions (and decimal, which it loads) count a margin's percentage only
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    modules = _checked_modules(tmp_path)["modules"]
    assert isinstance(modules, set) and "budgetlens.contract.check" in modules
    assert {"fractions", "decimal"} & modules == set()
    chat = tmp_path / "ws" / "pipelines" / "chat.yaml"
    text = chat.read_text("utf-8")
    assert "settings:\n" in text
    chat.write_text(text.replace("settings:\n",
                                 "settings:\n  budget_safety_margin_tokens: \"2% + 128\"\n", 1),
                    "utf-8")
    modules = _checked_modules(tmp_path)["modules"]
    assert isinstance(modules, set) and "fractions" in modules
