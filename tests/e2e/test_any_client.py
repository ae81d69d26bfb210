"""Issue 13: the server follows what each client DECLARES (LSP 3.17), not what VS Code does.

One test (or a few) per numbered cause of the issue, each with the client capabilities of
that kind of client declared here (ALE, eglot, lsp-mode and Neovim 0.11 differ from VS Code
in exactly these switches):

1. quick-fixes come from the server's own diagnostics at the range: a code-action request
   whose diagnostics carry no ``data``, or that has no diagnostics at all, gets them;
2. hover in the client's preferred format (``hover.contentFormat: ["plaintext"]``);
3. ``Command`` instead of ``CodeAction`` without ``codeActionLiteralSupport``;
   ``relatedInformation`` only with ``publishDiagnostics.relatedInformation``;
4. ``showHierarchyContext`` / ``showBudgetReport`` shown through ``window/showDocument`` of
   a read-only file in the per-user cache (else ``window/showMessage``) unless the client
   set ``initializationOptions.displaysCommandResults``;
5. lenses: ``workspace/codeLens/refresh`` only to a client that declared it, and a lens
   request after a fix is never stale (the Neovim 0.11 path re-requests);
6. config.json found above a workspace folder rooted at the pipeline's own folder (eglot);
7. a JSON buffer ending with a newline (ALE) still gets its cut diagnostic and quick-fix;
8. the protocol: see test_protocol_conformance.py (a raw JSON-RPC session).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from . import expected
from .harness import (
    TIMEOUT,
    Editor,
    caps,
    codes_of,
    find,
    running_server,
    td,
    units,
    uri_to_path,
)


def client(*, literals: bool = True, data: bool = True, related: bool = True,
           hover: tuple[str, ...] = ("markdown", "plaintext"), show_document: bool = True,
           lens_refresh: bool = True) -> types.ClientCapabilities:
    """``harness.caps()`` with the switches of issue 13 set."""
    base = caps(show_document=show_document)
    assert base.text_document is not None and base.workspace is not None
    code_action = types.CodeActionClientCapabilities(data_support=data or None)
    if literals:
        assert base.text_document.code_action is not None
        code_action = attrs.evolve(code_action, code_action_literal_support=(
            base.text_document.code_action.code_action_literal_support))
    text_document = attrs.evolve(
        base.text_document, code_action=code_action,
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
            related_information=related),
        hover=types.HoverClientCapabilities(
            content_format=[types.MarkupKind(f) for f in hover]))
    workspace = attrs.evolve(base.workspace, code_lens=types.CodeLensWorkspaceClientCapabilities(
        refresh_support=True) if lens_refresh else None)
    return attrs.evolve(base, text_document=text_document, workspace=workspace)


async def _bl050(ed: Editor, uri: str) -> types.Diagnostic:
    diags = await ed.wait_diagnostics(uri, lambda ds: "BL050" in codes_of(ds))
    return next(d for d in diags if d.code == "BL050")


async def _code_actions(ed: Editor, uri: str, rng: types.Range,
                        diagnostics: list[types.Diagnostic]) -> list[Any]:
    return list(await ed.client.text_document_code_action_async(types.CodeActionParams(
        text_document=td(uri), range=rng,
        context=types.CodeActionContext(diagnostics=diagnostics))) or [])


def _titles(items: list[Any]) -> list[str]:
    return [i.title for i in items]


# --- 1. quick-fixes without Diagnostic.data ------------------------------------------------

async def test_1_quick_fixes_without_data_or_without_diagnostics(workspace: Path) -> None:
    b = expected.write_report(workspace)
    new_context = expected.WINDOW - (b.fixed + b.history + b.output + b.margin)
    new_output = b.output + b.headroom
    async with running_server(workspace, capabilities=client(data=False)) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        diag = await _bl050(ed, uri)
        stripped = attrs.evolve(diag, data=None)
        with_data = await _code_actions(ed, uri, diag.range, [diag])
        without_data = await _code_actions(ed, uri, diag.range, [stripped])
        without_diags = await _code_actions(ed, uri, diag.range, [])
        wanted = [f"Clamp max_context_tokens 6144 → {new_context}",
                  f"Clamp max_output_tokens of step 'write_report' 2048 → {new_output}"]
        for actions in (with_data, without_data, without_diags):
            quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
            assert _titles(quick) == wanted, _titles(actions)
        # the action names the diagnostic as the client has it
        assert list(without_data[0].diagnostics or []) == [stripped]
        assert without_diags[0].diagnostics and without_diags[0].diagnostics[0].code == "BL050"
        # an empty range at the cursor inside the diagnostic works too (ALE's request)
        cursor = types.Range(start=diag.range.end, end=diag.range.end)
        assert _titles(await _code_actions(ed, uri, cursor, []))[:2] == wanted
        # applied, the error is gone
        before = ed.texts[uri]
        ed.apply(without_diags[0].edit)
        assert ed.texts[uri] == before.replace("max_context_tokens: 6144",
                                               f"max_context_tokens: {new_context}")
        await ed.wait_diagnostics(uri, lambda ds: "BL050" not in codes_of(ds))


async def test_1_no_quick_fix_away_from_the_diagnostics(workspace: Path) -> None:
    async with running_server(workspace, capabilities=client(data=False)) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        await _bl050(ed, uri)
        line = find(ed.texts[uri], "# Weekly report")[0]
        top = types.Range(start=types.Position(line=line, character=0),
                          end=types.Position(line=line, character=0))
        actions = await _code_actions(ed, uri, top, [])
        assert [a for a in actions if a.kind == types.CodeActionKind.QuickFix] == []


# --- 2. hover in the client's format ---------------------------------------------------------

async def _hover(ed: Editor, uri: str, needle: str) -> types.Hover | None:
    line, col = find(ed.texts[uri], needle)
    line_text = ed.texts[uri].split("\n")[line]
    return await ed.client.text_document_hover_async(types.HoverParams(
        text_document=td(uri), position=types.Position(
            line=line, character=units(line_text[:col + 1], ed.encoding))))


async def test_2_hover_is_plain_text_for_a_plaintext_client(workspace: Path) -> None:
    b = expected.write_report(workspace)
    async with running_server(workspace, capabilities=client(hover=("plaintext",))) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        result = await _hover(ed, uri, "max_output_tokens: 2048")
        assert result is not None and isinstance(result.contents, types.MarkupContent)
        assert result.contents.kind == types.MarkupKind.PlainText
        text = result.contents.value
        assert "**" not in text and "`" not in text and "|" not in text
        assert text.startswith("max_output_tokens = 2048")
        assert f"long_report.yaml › write_report: {b.lens()}" in text
        prompt = await _hover(ed, uri, "prompt_key: report")
        assert prompt is not None and isinstance(prompt.contents, types.MarkupContent)
        first = (workspace / "prompts/report.txt").read_text("utf-8").splitlines()[0]
        assert "    " + first in prompt.contents.value.split("\n")  # the preview, indented
        assert "```" not in prompt.contents.value


async def test_2_hover_is_markdown_when_markdown_comes_first(workspace: Path) -> None:
    async with running_server(workspace, capabilities=client(
            hover=("markdown", "plaintext"))) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        result = await _hover(ed, uri, "max_output_tokens: 2048")
        assert result is not None and isinstance(result.contents, types.MarkupContent)
        assert result.contents.kind == types.MarkupKind.Markdown
        assert result.contents.value.startswith("**max_output_tokens** = `2048`")


# --- 3. Command without literal support; relatedInformation only when declared -------------

async def test_3_commands_for_a_client_without_code_action_literals(workspace: Path) -> None:
    b = expected.write_report(workspace)
    new_context = expected.WINDOW - (b.fixed + b.history + b.output + b.margin)
    async with running_server(workspace, capabilities=client(literals=False)) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        diag = await _bl050(ed, uri)
        items = await _code_actions(ed, uri, diag.range, [diag])
        assert items and all(isinstance(i, types.Command) for i in items), items
        [fix] = [i for i in items if i.title.startswith("Clamp max_context_tokens")]
        assert fix.command == "budgetlens.applyFix"
        before = ed.texts[uri]
        result = await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command=fix.command, arguments=fix.arguments))
        assert result["applied"] is True
        assert ed.texts[uri] == before.replace("max_context_tokens: 6144",
                                               f"max_context_tokens: {new_context}")
        await ed.wait_diagnostics(uri, lambda ds: "BL050" not in codes_of(ds))
        # the JSON quick-fix is the command itself
        json_uri = ed.open("responses/truncated.json", language_id="json")
        [cut] = await ed.wait_diagnostics(json_uri)
        [show] = await _code_actions(ed, json_uri, cut.range, [])
        assert isinstance(show, types.Command)
        assert show.command == "budgetlens.showHierarchyContext"


async def test_3_apply_fix_refuses_edits_outside_the_workspace(workspace: Path,
                                                               tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("a: 1\n", "utf-8")
    async with running_server(workspace, capabilities=client(literals=False)) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        edit = {"changes": {outside.resolve().as_uri(): [{
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
            "newText": "b"}]}}
        with pytest.raises(JsonRpcException) as info:
            await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="budgetlens.applyFix", arguments=[{"uri": uri, "edit": edit}]))
        assert info.value.code == -32602 and "outside the workspace folders" in \
            info.value.message
        assert ed.applied_edits == []
    assert outside.read_text("utf-8") == "a: 1\n"


@pytest.mark.parametrize("related", [True, False])
async def test_3_related_information_only_when_declared(workspace: Path,
                                                        related: bool) -> None:
    async with running_server(workspace, capabilities=client(related=related)) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        diag = await _bl050(ed, uri)
        prompt = await ed.wait_diagnostics(ed.uri("prompts/report.txt"),
                                           lambda ds: "BL050" in codes_of(ds))
        if related:
            assert diag.related_information and prompt[0].related_information
        else:
            assert diag.related_information is None
            assert prompt[0].related_information is None
        assert diag.message  # the diagnostic itself is the same


async def test_3_related_information_filtered_for_a_pulling_client(workspace: Path) -> None:
    capabilities = client(related=False)
    assert capabilities.text_document is not None
    capabilities = attrs.evolve(capabilities, text_document=attrs.evolve(
        capabilities.text_document, diagnostic=types.DiagnosticClientCapabilities()))
    async with running_server(workspace, capabilities=capabilities) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        await ed.wait_diagnostics(ed.uri("prompts/report.txt"),
                                  lambda ds: "BL050" in codes_of(ds))
        report = await ed.client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=td(uri)))
        assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
        assert "BL050" in codes_of(list(report.items))
        assert all(d.related_information is None for d in report.items)


# --- 4. command results shown in any client ---------------------------------------------------

async def _round_trip(ed: Editor) -> None:
    """One request answered: what the server sent before its answer has arrived."""
    await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="budgetlens.showLocation", arguments=[{"uri": ed.uri("config.json")}]))


async def _run(ed: Editor, command: str, arg: dict[str, Any]) -> Any:
    return await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command, arguments=[arg]))


async def _shown_view(ed: Editor, count: int) -> Path:
    for _ in range(int(TIMEOUT * 10)):
        views = [d for d in ed.client.shown_documents if "/budgetlens/views/" in d.uri]
        if len(views) >= count:
            return Path(uri_to_path(views[count - 1].uri))
        await _round_trip(ed)
    raise AssertionError(f"no view shown; shown documents: {ed.client.shown_documents}")


async def test_4_results_open_as_read_only_files_in_the_user_cache(
        workspace: Path, private_cache: Path) -> None:
    text = (workspace / "responses/truncated.json").read_text("utf-8")
    async with running_server(workspace, capabilities=client()) as ed:
        uri = ed.open("responses/truncated.json", language_id="json")
        result = await _run(ed, "budgetlens.showHierarchyContext", {"uri": uri})
        view = await _shown_view(ed, 1)
        assert view.parent == private_cache / "budgetlens" / "views"
        body = view.read_text("utf-8")
        assert result["text"] in body and "<<<CUT>>>" in body
        assert result["description"] in body and "truncated.json" in body
        assert not os.stat(view).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
        assert text == (workspace / "responses/truncated.json").read_text("utf-8")

        pipeline = ed.open("pipelines/long_report.yaml")
        report = await _run(ed, "budgetlens.showBudgetReport", {"uri": pipeline})
        view = await _shown_view(ed, 2)
        assert view.suffix == ".md"
        assert report["text"].rstrip("\n") in view.read_text("utf-8")
        assert ed.client.messages == [] or all("budget report" not in m.message
                                               for m in ed.client.messages)
        # run again: the same file, rewritten (read-only files are replaced, not refused)
        await _run(ed, "budgetlens.showBudgetReport", {"uri": pipeline})
        assert await _shown_view(ed, 3) == view


async def test_4_results_as_a_message_without_show_document(workspace: Path) -> None:
    async with running_server(workspace, capabilities=client(show_document=False)) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        report = await _run(ed, "budgetlens.showBudgetReport", {"uri": uri})
        for _ in range(int(TIMEOUT * 10)):
            found = [m for m in ed.client.messages if "budget report" in m.message]
            if found:
                break
            await _round_trip(ed)
        [message] = found
        assert message.type == types.MessageType.Info
        assert report["text"].splitlines()[1] in message.message  # the table's first row
        assert "budgetlens/views/report-long_report-" in message.message  # the full text
        assert ed.client.shown_documents == []


async def test_4_no_view_when_the_client_displays_results_itself(workspace: Path) -> None:
    async with running_server(workspace, capabilities=client(),
                              init_options={"displaysCommandResults": True}) as ed:
        uri = ed.open("responses/truncated.json", language_id="json")
        result = await _run(ed, "budgetlens.showHierarchyContext", {"uri": uri})
        assert "<<<CUT>>>" in result["text"]
        await _round_trip(ed)
        await _round_trip(ed)
        assert [d for d in ed.client.shown_documents if "/budgetlens/" in d.uri] == []
        assert ed.client.messages == []  # nor an "invalid settings" message for the option


# --- 5. lenses after a fix ----------------------------------------------------------------------

async def _step_lens(ed: Editor, uri: str) -> str:
    lenses = await ed.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=td(uri)))
    line = find(ed.texts[uri], "- id: write_report")[0]
    titles = [lens.command.title for lens in lenses or []
              if lens.command and lens.range.start.line == line]
    assert titles, lenses
    return titles[0]


@pytest.mark.parametrize("refresh", [True, False])
async def test_5_lenses_after_a_fix(workspace: Path, refresh: bool) -> None:
    b = expected.write_report(workspace)
    new_context = expected.WINDOW - (b.fixed + b.history + b.output + b.margin)
    fixed = expected.write_report(workspace, context=new_context)
    async with running_server(workspace, capabilities=client(lens_refresh=refresh)) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        diag = await _bl050(ed, uri)
        assert await _step_lens(ed, uri) == b.lens()
        refreshes = getattr(ed.client, "lens_refreshes", 0)
        [fix] = [a for a in await _code_actions(ed, uri, diag.range, [])
                 if a.title.startswith("Clamp max_context_tokens")]
        ed.apply(fix.edit)
        await ed.wait_diagnostics(uri, lambda ds: "BL050" not in codes_of(ds))
        await _round_trip(ed)
        after = getattr(ed.client, "lens_refreshes", 0)
        if refresh:
            assert after > refreshes
        else:  # never a request the client did not declare
            assert after == refreshes == 0
        # the lens a client asks for after the fix (Neovim re-requests) is never stale
        assert await _step_lens(ed, uri) == fixed.lens()


# --- 6. config.json above a workspace folder rooted at the file's folder ------------------------

async def test_6_config_above_the_workspace_folder_is_found_like_the_cli(
        workspace: Path) -> None:
    b = expected.write_report(workspace)
    pipelines = workspace / "pipelines"
    cli = subprocess.run([sys.executable, "-m", "budgetlens_cli", "check",
                          str(pipelines / "long_report.yaml"), "--format", "json"],
                         capture_output=True, text=True, cwd=pipelines, timeout=120)
    cli_codes = sorted({d["code"] for d in _cli_diagnostics(cli.stdout)
                        if d["file"].endswith("long_report.yaml")})
    assert "BL050" in cli_codes and "BL010" not in cli_codes
    async with running_server(pipelines, capabilities=client()) as ed:  # eglot's root
        uri = ed.open("long_report.yaml")
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL050" in codes_of(ds))
        assert "BL010" not in codes_of(diags)
        assert sorted(set(codes_of(diags))) == cli_codes
        assert await _step_lens(ed, uri) == b.lens()


def _cli_diagnostics(stdout: str) -> list[dict[str, Any]]:
    data = json.loads(stdout)
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "code" in node and "file" in node and "message" in node:
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(data)
    return found


async def test_6_no_config_anywhere_still_says_bl010(tmp_path: Path) -> None:
    root = tmp_path / "alone" / "pipelines"
    root.mkdir(parents=True)
    (root / "p.yaml").write_text("steps: []\n", "utf-8")
    async with running_server(root, capabilities=client()) as ed:
        uri = ed.open("p.yaml")
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL010" in codes_of(ds))
        assert "BL010" in codes_of(diags)


# --- 7. a JSON buffer with a final newline (ALE) -----------------------------------------------

async def test_7_json_with_a_final_newline_gets_its_cut_and_quick_fix(workspace: Path) -> None:
    text = (workspace / "responses/truncated.json").read_text("utf-8").rstrip("\n") + "\n"
    async with running_server(workspace, capabilities=client(data=False,
                                                              literals=False)) as ed:
        uri = ed.open("responses/truncated.json", text=text, language_id="json")
        [cut] = await ed.wait_diagnostics(uri)
        assert cut.code == "BL200"
        [show] = await _code_actions(ed, uri, cut.range, [])
        assert isinstance(show, types.Command)
        result = await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command=show.command, arguments=show.arguments))
        assert result["cut"] is not None and "<<<CUT>>>" in result["text"]
