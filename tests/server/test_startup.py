"""The server's start (issue 12): what it loads and in which order it works, never timed.

- importing the server loads only what the first diagnostics need: not the clamp plans, the
  YAML editing and verification modules, the unified-budget policy model, the JSON Schema
  nor tiktoken (the tokenizer loads on the analysis thread);
- a check without a ``settings.injection`` block never builds the policy model, one with a
  block does (and the model's field descriptions are still those of its documentation);
- ``serve`` loads with the cyclic collector off and freezes what it loaded;
- the heap is frozen after the analysis's results are delivered, not before;
- documents opened before the workspace index are analysed and delivered before the whole
  re-check starts, and so are those opened while the index waits for the client's settings;
- a warm start (the prompts counted before, in the persistent count cache) publishes its
  first diagnostics without building the tokenizer's encoding;
- valid config.json and pipeline files (a ``settings.injection`` block included) are checked
  without importing pydantic; a wrong value loads it, for pydantic's own message.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from budgetlens_lsp import serve
from budgetlens_lsp import session as session_module
from budgetlens_lsp.features import lifecycle
from budgetlens_lsp.features.state import Analysis, ServerState
from budgetlens_lsp.scheduling import AnalysisResult
from budgetlens_lsp.session import Session
from budgetlens_lsp.workspace_index import IndexMode, ProgressHook, Snapshot

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: Modules the first diagnostics never need, each loaded on first use.
NOT_AT_START = ("budgetlens.contract.plan", "budgetlens.yamldoc.edit", "budgetlens.yamldoc.verify",
                "budgetlens.assembly.unified_budget", "budgetlens.contract.json_schema",
                "tiktoken")


def _loaded_after(code: str, cwd: Path | None = None) -> tuple[set[str], list[str]]:
    """The modules loaded in a fresh interpreter after ``code``, and what it printed."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stderr
    *printed, last = proc.stdout.splitlines()
    return set(json.loads(last)), printed


def test_importing_the_server_loads_nothing_the_first_diagnostics_do_not_need() -> None:
    modules, _ = _loaded_after("import budgetlens_lsp.server")
    assert "budgetlens.contract.check" in modules  # the checker itself is there
    assert "budgetlens_lsp.features.diagnostics" in modules
    assert sorted(m for m in NOT_AT_START if m in modules) == []


def test_the_policy_model_is_built_only_for_a_pipeline_with_an_injection_block(
        tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root)
    check = ("from budgetlens.contract.check import check_pipeline\n"
             "from budgetlens.contract.injection_settings import check_injection\n"
             "from budgetlens.files import DiskFiles\n"
             "import sys\n"
             "r = check_pipeline('pipelines/{name}', files=DiskFiles())\n"
             "i = check_injection(r, files=DiskFiles())\n"
             "print(len(r.steps), i.policy is not None, len(i.steps),"
             " 'budgetlens.assembly.unified_budget' in sys.modules)\n")
    # long_report.yaml and its parent base.yaml have no settings.injection block
    assert "injection" not in (root / "pipelines/long_report.yaml").read_text()
    assert "injection" not in (root / "pipelines/base.yaml").read_text()
    _, printed = _loaded_after(check.format(name="long_report.yaml"), cwd=root)
    assert printed == ["2 False 0 False"]  # its own two steps (outline, write_report)
    # support.yaml has one: the policy is read and every step gets its split
    assert "injection:" in (root / "pipelines/support.yaml").read_text()
    _, printed = _loaded_after(check.format(name="support.yaml"), cwd=root)
    steps, policy, splits, loaded = printed[0].split()
    assert (policy, loaded) == ("True", "True") and int(splits) == int(steps) > 0


def test_the_policy_fields_keep_their_documented_descriptions() -> None:
    from budgetlens.assembly.unified_budget import UnifiedContextBudgetPolicy
    schema = UnifiedContextBudgetPolicy.model_json_schema()["properties"]
    # written out by hand, as the model's documentation says them
    assert schema["max_injection_tokens_absolute"]["description"] == (
        "Total budget for all injected context (knowledge cards + bucket content), at most.")
    assert schema["interaction_policy_sub_budget_pct"]["description"] == (
        "At most this fraction of the knowledge card budget goes to ``interaction_policy``"
        " cards.")
    assert schema["schema_version"]["description"] == (
        "Version of the policy format; 1 is the only one.")
    assert all(field.get("description") for field in schema.values())


def test_serve_loads_with_the_collector_off_and_freezes_what_it_loaded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import budgetlens_lsp.server as server_module
    seen: dict[str, Any] = {}

    class FakeServer:
        ctx = SimpleNamespace(session=SimpleNamespace(freeze_after_index=False))

        def start_io(self) -> None:
            seen["serving"] = (gc.isenabled(), gc.get_freeze_count())

    def create_server() -> FakeServer:
        seen["loading"] = gc.isenabled()
        return FakeServer()

    monkeypatch.setattr(server_module, "create_server", create_server)
    monkeypatch.setattr(serve, "configure_logging", lambda *args: None)
    thresholds = gc.get_threshold()
    args = argparse.Namespace(tcp=None, host=None, log_file=None, log_level="warning")
    try:
        assert gc.isenabled()
        serve.run(args)
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    assert seen["loading"] is False
    enabled, frozen = seen["serving"]
    assert enabled is True and frozen > 0
    assert gc.isenabled()


class _Recorder:
    """A fake analysis: each run is recorded (mode, open documents); never held."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def __call__(self, snapshot: Snapshot, changed: frozenset[str], mode: IndexMode,
                 progress: ProgressHook | None) -> AnalysisResult[Any]:
        self.events.append(f"analyse {mode.value} {sorted(snapshot.versions)}")
        return AnalysisResult()


async def test_the_heap_is_frozen_after_the_results_are_delivered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    monkeypatch.setattr(session_module, "_freeze_heap", lambda: events.append("freeze"))
    session: Session[Any] = Session(_Recorder(events))

    async def deliver(results: Any) -> None:
        events.append("deliver")
    session.on_results = deliver
    session.freeze_after_index = True
    session.mark_dirty([], IndexMode.FULL)
    await session.flush()
    session.shutdown()
    assert events == ["analyse full []", "deliver", "freeze"]


def _recorded_server(events: list[str]) -> tuple[Session[Any], ServerState]:
    """A session whose analyses and deliveries are recorded in ``events``, and a server
    state around it whose client shows no progress."""
    session: Session[Any] = Session(_Recorder(events))

    async def deliver(results: Any) -> None:
        events.append("deliver")
    session.on_results = deliver
    return session, ServerState(cast(Any, SimpleNamespace(work_done_progress=None)),
                                session, Analysis())


async def test_documents_opened_before_the_index_are_delivered_before_the_whole_recheck(
        ) -> None:
    events: list[str] = []
    session, ctx = _recorded_server(events)
    session.open("file:///w/pipelines/a.yaml", 1, "steps: []\n", "yaml")
    await lifecycle.index_workspace(ctx)  # the client has no progress: no token
    await asyncio.sleep(0)
    session.shutdown()
    assert events == ["analyse incremental ['file:///w/pipelines/a.yaml']", "deliver",
                      "analyse full ['file:///w/pipelines/a.yaml']", "deliver"]


async def _start_and_publish(root: Path, cache: Path, log: Path) -> list[str]:
    """A real server over stdio (``serve``, log level info into ``log``) with ``cache`` as
    its per-user cache folder: open the example's over-budget pipeline, wait for its first
    diagnostics, shut down; the diagnostics' messages."""
    from lsprotocol import types
    from pytest_lsp import make_test_lsp_client

    from tests.e2e.harness import SERVER_COMMAND, TIMEOUT, caps, stop_client, wait_published

    env = {k: v for k, v in os.environ.items() if k != "BUDGETLENS_NO_CACHE"}
    env.update(XDG_CACHE_HOME=str(cache), LOCALAPPDATA=str(cache))
    client = make_test_lsp_client()

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        pass

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(params: None) -> None:
        pass

    await client.start_io(*SERVER_COMMAND, "--log-level", "info", "--log-file", str(log),
                          env=env)
    try:
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=caps(), root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)])),
            TIMEOUT)
        path = root / "pipelines" / "long_report.yaml"
        uri = path.as_uri()
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri, "yaml", 1, path.read_text("utf-8"))))
        diags = await wait_published(client, uri)
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        await stop_client(client)
    return sorted(d.message for d in diags)


def _built_at_first_publish(log: Path) -> list[int]:
    return [int(line.rsplit(":", 1)[1]) for line in log.read_text("utf-8").splitlines()
            if "first diagnostics published; tokenizer encodings built:" in line]


async def test_a_warm_start_publishes_before_building_the_encoding(tmp_path: Path) -> None:
    """A second start on the same workspace and cache folder counts the prompts from the
    persistent count cache: its first diagnostics go out with no encoding built (the log
    line the server writes with them), and say what the first start's said."""
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root)
    root = root.resolve()
    cache = tmp_path / "cache"
    first = await _start_and_publish(root, cache, tmp_path / "first.log")
    assert _built_at_first_publish(tmp_path / "first.log") == [1]  # a first start builds it
    assert list((cache / "budgetlens" / "counts").glob("cl100k_base-*.marshal"))
    second = await _start_and_publish(root, cache, tmp_path / "second.log")
    assert _built_at_first_publish(tmp_path / "second.log") == [0]
    assert second == first
    # the prompt's and template's counts are in the message (cl100k_base, counted by hand
    # with plain tiktoken when the example was written)
    assert any("system prompt 48 + template 21" in m for m in first)


def test_the_server_start_does_not_load_get_contexts() -> None:
    """``settings`` writes out get_contexts's two defaults instead of importing them; they
    are the same values."""
    modules, _ = _loaded_after("import budgetlens_lsp.server")
    assert "budgetlens.continuation.contexts" not in modules
    from budgetlens.continuation import contexts
    from budgetlens_lsp import settings
    assert settings.DEFAULT_HIERARCHY_BUDGET == contexts.DEFAULT_BUDGET == 1000
    assert settings.DEFAULT_CUT_MARKER == contexts.DEFAULT_MARKER == "<<<CUT>>>"


#: A pipeline with one wrong value (a number written as a string), next to the examples.
WRONG_PIPELINE = """extends: base.yaml
settings:
  max_context_tokens: "4096"
steps:
  - id: answer
    type: call_model
    prompt_key: answer
    max_output_tokens: 256
"""
PYDANTIC = ("pydantic", "pydantic_core")


def test_valid_pipelines_and_config_are_checked_without_pydantic(tmp_path: Path) -> None:
    """The first diagnostics of valid files need no pydantic (contract/shapes.py reads them,
    contract/injection_settings.py the injection policy); a wrong value loads it and gets the same
    diagnostic as before, at the value."""
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root)
    (root / "pipelines" / "wrong.yaml").write_text(WRONG_PIPELINE, encoding="utf-8")
    support = (root / "pipelines" / "support.yaml").read_text(encoding="utf-8")
    assert "\n  injection:\n    max_injection_tokens_absolute: 2000\n" \
        "    max_injection_tokens_pct_of_context: 0.20\n" in support
    (root / "pipelines" / "wrong_injection.yaml").write_text(support.replace(
        "max_injection_tokens_pct_of_context: 0.20", "max_injection_tokens_pct_of_context: 1.5"),
        encoding="utf-8")
    # examples/config.json spells the development key "developement" (an alias)
    assert '"developement": true' in (root / "config.json").read_text(encoding="utf-8")
    check = ("import sys\n"
             "import budgetlens_lsp.server\n"
             "from budgetlens.contract.check import check_pipeline\n"
             "from budgetlens.files import DiskFiles\n"
             "def loaded():\n"
             "    return [m for m in ('pydantic', 'pydantic_core') if m in sys.modules]\n"
             "for name in ('long_report', 'support', 'chat', 'multilingual', 'wrong',\n"
             "             'wrong_injection'):\n"
             "    r = check_pipeline(f'pipelines/{name}.yaml', files=DiskFiles())\n"
             "    print(name, loaded(), [(d.code, d.message, d.file, d.range.start.line,\n"
             "                            d.range.start.character, d.range.end.line,\n"
             "                            d.range.end.character) for d in r.diagnostics])\n")
    modules, printed = _loaded_after(check, cwd=root)
    over = ("BL050", "step 'write_report' does not fit the context window: fixed 101 (system"
            " prompt 48 + template 21 + format overhead 32) + history 0 + context 6144 +"
            " output 2048 + margin 128 = 8421 > 8192 (over by 229) [fail_fast]")
    assert printed[0].startswith("long_report [] [('BL050', ")  # no pydantic after it
    assert over[1] in printed[0]
    assert printed[1] == "support [] []"  # with its settings.injection block
    assert printed[2] == "chat [] []"
    assert printed[3] == "multilingual [] []"
    # written by hand: the value "4096" (with its quotes) is line 2, characters 22-28
    wrong = [("BL030", "settings.max_context_tokens: expected an integer, got the string"
                       " '4096' (remove the quotes)", "pipelines/wrong.yaml", 2, 22, 2, 28)]
    assert printed[4] == f"wrong {list(PYDANTIC)} {wrong!r}"
    # the policy model's message, at the value 1.5 (line 8, characters 41-44)
    wrong = [("BL102", "settings.injection.max_injection_tokens_pct_of_context: input should"
                       " be less than or equal to 1 (got 1.5)", "pipelines/wrong_injection.yaml",
              8, 41, 8, 44)]
    assert printed[5] == f"wrong_injection {list(PYDANTIC)} {wrong!r}"
    assert set(PYDANTIC) <= modules


async def _one_turn() -> None:
    """Let every task that can run do so once (one turn of the event loop)."""
    turned = asyncio.Event()
    asyncio.get_running_loop().call_soon(turned.set)
    await turned.wait()


async def test_the_index_waits_for_the_clients_settings() -> None:
    events: list[str] = []
    session, ctx = _recorded_server(events)
    settled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    indexing = asyncio.ensure_future(lifecycle.index_workspace(ctx, settled))
    await _one_turn()
    # the client opens a document, then answers workspace/configuration
    session.open("file:///w/pipelines/a.yaml", 1, "steps: []\n", "yaml")
    await _one_turn()
    assert not indexing.done()
    settled.set_result(None)
    await indexing
    session.shutdown()
    assert events == ["analyse incremental ['file:///w/pipelines/a.yaml']", "deliver",
                      "analyse full ['file:///w/pipelines/a.yaml']", "deliver"]
