"""Settings: initializationOptions, workspace/configuration (section ``budgetlens``), live
didChangeConfiguration, and invalid values (a message, then the default)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lsprotocol import types

from budgetlens.tokens.core import get_tokenizer

from . import expected
from .harness import Editor, caps, codes_of, running_server, td

LONG = "pipelines/long_report.yaml"


def _bl050(diags: list[types.Diagnostic]) -> types.Diagnostic | None:
    return next((d for d in diags if d.code == "BL050"), None)


def _severity(sev: types.DiagnosticSeverity) -> Any:
    return lambda ds: (d := _bl050(ds)) is not None and d.severity == sev


async def _lens_titles(ed: Editor, uri: str) -> list[str]:
    lenses = await ed.client.text_document_code_lens_async(types.CodeLensParams(
        text_document=td(uri)))
    return [lens.command.title for lens in lenses or [] if lens.command]


async def test_initialization_options_set_the_policy(workspace: Path) -> None:
    async with running_server(workspace, init_options={"policy": "auto_clamp"},
                              capabilities=caps(configuration=False)) as ed:
        uri = ed.open(LONG)
        diags = await ed.wait_diagnostics(uri, _severity(types.DiagnosticSeverity.Warning))
    d = _bl050(diags)
    assert d is not None and "auto_clamp lowers max_context_tokens" in d.message


async def test_workspace_configuration_and_live_changes(workspace: Path) -> None:
    config = {"budgetlens": {"policy": "auto_clamp"}}
    async with running_server(workspace, configuration=config) as ed:
        uri = ed.open(LONG)
        await ed.wait_diagnostics(uri, _severity(types.DiagnosticSeverity.Warning))
        # the user switches back to fail_fast: the server pulls the section again
        ed.client.set_configuration({"policy": "fail_fast"}, section="budgetlens")
        ed.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=None))
        await ed.wait_diagnostics(uri, _severity(types.DiagnosticSeverity.Error))
        # settings pushed in the notification itself are applied too
        json_uri = ed.open("responses/truncated.json", None, "json")
        await ed.wait_diagnostics(json_uri)
        ed.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"budgetlens": {"diagnostics": {"pipelines": False, "prompts": False,
                                                     "truncatedJson": False}}}))
        await ed.wait_diagnostics(uri, lambda ds: ds == [])
        await ed.wait_diagnostics(ed.uri("prompts/report.txt"), lambda ds: ds == [])
        await ed.wait_diagnostics(json_uri, lambda ds: ds == [])
        # and back on: the open JSON buffer is analysed again
        ed.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"budgetlens": {}}))
        await ed.wait_diagnostics(json_uri, lambda ds: ds != [])
        await ed.wait_diagnostics(uri, lambda ds: "BL050" in codes_of(ds))


async def test_invalid_settings_give_a_message_and_the_defaults(workspace: Path) -> None:
    bad = {"policy": "sometimes", "hierarchyBudget": -5, "lenses": {"steps": "yes"},
           "tokenizer": "no-such-tokenizer-xyz"}
    async with running_server(workspace, init_options=bad,
                              capabilities=caps(configuration=False)) as ed:
        uri = ed.open(LONG)
        # the unknown tokenizer is the core's concern: a BL014 diagnostic, counting goes on
        diags = await ed.wait_diagnostics(uri, _severity(types.DiagnosticSeverity.Error))
        assert "BL014" in codes_of(diags)
        result = await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="budgetlens.showHierarchyContext",
            arguments=[{"uri": ed.open("responses/truncated.json", None, "json")}]))
        assert result["budget"] == 1000  # the default, not -5
        titles = await _lens_titles(ed, uri)
        assert any(t.startswith("fixed ") for t in titles)  # lenses.steps stays on
        [message] = [m for m in ed.client.messages if "invalid settings" in m.message
                     or "invalid initializationOptions" in m.message]
    for name in ("budgetlens.policy", "budgetlens.hierarchyBudget", "budgetlens.lenses.steps"):
        assert name in message.message


async def test_tokenizer_marker_budget_and_lens_toggles(workspace: Path) -> None:
    prompt = (workspace / "prompts/report.txt").read_text("utf-8")
    o200k = get_tokenizer("o200k_base").count(prompt)
    options = {"tokenizer": "o200k_base", "cutMarker": "<<HERE>>", "hierarchyBudget": 50,
               "lenses": {"settings": False}}
    async with running_server(workspace, init_options=options,
                              capabilities=caps(configuration=False)) as ed:
        [prompt_lens] = await _lens_titles(ed, ed.open("prompts/report.txt", None, "plaintext"))
        assert prompt_lens.startswith(f"{o200k} tokens (o200k_base)")
        titles = await _lens_titles(ed, ed.open(LONG))
        assert titles and not any(t.startswith("tightest") for t in titles)
        result = await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="budgetlens.showHierarchyContext",
            arguments=[{"uri": ed.open("responses/truncated.json", None, "json")}]))
    assert result["budget"] == 50 and str(result["text"]).endswith("<<HERE>>")


async def test_config_path_setting_points_at_another_config(workspace: Path) -> None:
    config = json.loads((workspace / "config.json").read_text("utf-8"))
    config["model_context_window"] = 16384
    (workspace / "big-model.json").write_text(json.dumps(config), "utf-8")
    async with running_server(workspace, init_options={"configPath": "big-model.json"},
                              capabilities=caps(configuration=False)) as ed:
        uri = ed.open(LONG)
        assert await ed.wait_diagnostics(uri, lambda ds: ds == []) == []
        titles = await _lens_titles(ed, uri)
    b = expected.write_report(workspace)
    assert any(t.endswith(f"= {b.total} / 16384 ({16384 - b.total:,} free)") for t in titles)
