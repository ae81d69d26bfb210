"""Commands: ``budgetlens.clampAll`` (workspace/applyEdit, refused politely when the client
cannot apply edits) and ``budgetlens.showBudgetReport``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from . import expected
from .harness import Editor, RecordedClient, caps, codes_of, running_server


async def _run(ed: Editor, command: str, *arguments: object) -> Any:
    return await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command, arguments=list(arguments)))


async def test_server_advertises_its_commands(
        recorded: RecordedClient, workspace: Path) -> None:
    async with running_server(workspace, recorded=recorded) as ed:
        assert ed.server_capabilities is not None
        provider = ed.server_capabilities.execute_command_provider
        assert provider is not None
        assert {"budgetlens.showHierarchyContext", "budgetlens.clampAll",
                "budgetlens.showBudgetReport", "budgetlens.showLocation"} <= set(provider.commands)


async def test_clamp_all_applies_the_plan_through_workspace_apply_edit(
        recorded: RecordedClient, workspace: Path) -> None:
    b = expected.write_report(workspace)
    new_context = expected.WINDOW - (b.fixed + b.history + b.output + b.margin)
    async with running_server(workspace, recorded=recorded) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        before = ed.texts[uri]
        await ed.wait_diagnostics(uri, lambda ds: "BL050" in codes_of(ds))
        result = await _run(ed, "budgetlens.clampAll", {"uri": uri})
        assert result["applied"] is True
        [change] = result["changes"]
        assert (change["key"], change["before"], change["after"]) == (
            "settings.max_context_tokens", 6144, new_context)
        assert len(ed.applied_edits) == 1
        assert ed.texts[uri] == before.replace("max_context_tokens: 6144",
                                               f"max_context_tokens: {new_context}")
        await ed.wait_diagnostics(uri, lambda ds: "BL050" not in codes_of(ds))
        again = await _run(ed, "budgetlens.clampAll", {"uri": uri})
        assert again["applied"] is False and again["changes"] == []
        assert "nothing to clamp" in again["message"]


async def test_clamp_all_refuses_politely_without_apply_edit(workspace: Path) -> None:
    async with running_server(workspace, capabilities=caps(apply_edit=False)) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        result = await _run(ed, "budgetlens.clampAll", {"uri": uri})
        assert result["applied"] is False
        assert "cannot apply workspace edits" in result["message"]
        assert result["changes"]  # what it would have done
        assert ed.applied_edits == []
        assert any("cannot apply workspace edits" in m.message for m in ed.client.messages)
    assert "6144" in (workspace / "pipelines/long_report.yaml").read_text("utf-8")


async def test_clamp_all_reports_an_edit_the_client_rejected(
        recorded: RecordedClient, workspace: Path) -> None:
    async with running_server(workspace, recorded=recorded) as ed:
        ed.apply_edit_result = False
        uri = ed.open("pipelines/long_report.yaml")
        result = await _run(ed, "budgetlens.clampAll", {"uri": uri})
    assert result["applied"] is False and "refused" in result["message"]


async def test_show_budget_report_prints_the_step_table(
        recorded: RecordedClient, workspace: Path) -> None:
    b = expected.write_report(workspace)
    async with running_server(workspace, recorded=recorded) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        result = await _run(ed, "budgetlens.showBudgetReport", {"uri": uri})
        with pytest.raises(JsonRpcException):
            await _run(ed, "budgetlens.showBudgetReport", {"uri": ed.uri("nothing.yaml")})
    text = result["text"]
    assert text.startswith("long_report.yaml: window 8192, policy fail_fast")
    row = next(line for line in text.splitlines() if line.strip().startswith("write_report"))
    assert row.split() == ["write_report", str(b.fixed), "0", "6144", "2048", "128",
                           str(b.total), "8192", str(b.headroom), "NO"]
    [pipeline] = result["pipelines"]
    assert pipeline["pipeline"].endswith("long_report.yaml")
