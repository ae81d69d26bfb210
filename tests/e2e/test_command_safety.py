"""Commands read only open documents and files inside the workspace folders; the clamp
edits they send never overlap.

Every command the server advertises takes a URI. Pointed outside the workspace — a ``..``
segment, ``%2e%2e``, an absolute path elsewhere, a symlink inside that leads out — each
answers with an "invalid params" error naming the rule, and neither the answer nor any
request the server makes carries the outside file's content.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .harness import Editor, codes_of, running_server, td

SECRET = "TOPSECRET-7f3a"
RULE = "budgetlens reads only open documents and files inside the workspace folders"
INVALID_PARAMS = -32602
A_RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}


async def _run(ed: Editor, command: str, *arguments: object) -> Any:
    return await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command, arguments=list(arguments)))


@pytest.fixture
def secret(tmp_path: Path, workspace: Path) -> Path:
    """A truncated JSON file (and a pipeline) outside the workspace, and a symlink to each
    inside it."""
    outside = tmp_path / "outside"
    (outside / "pipelines").mkdir(parents=True)
    doc = outside / "s.json"
    doc.write_text('{"key": "' + SECRET + '", "more": [1, 2', "utf-8")
    (outside / "pipelines" / "p.yaml").write_text(
        f"# {SECRET}\nsteps:\n  - id: a\n    type: call_model\n    prompt_key: router\n"
        "    max_output_tokens: 9000\n", "utf-8")
    (workspace / "responses").mkdir(exist_ok=True)
    os.symlink(doc, workspace / "responses" / "link.json")
    os.symlink(outside / "pipelines" / "p.yaml", workspace / "pipelines" / "link.yaml")
    return outside


def _bad_uris(workspace: Path, outside: Path) -> dict[str, str]:
    base = workspace.resolve().as_uri()
    rel = os.path.relpath(outside / "s.json", workspace)  # ../outside/s.json
    return {
        "dot-dot": f"{base}/{rel}",
        "dot-dot in a folder": f"{base}/pipelines/../{rel}",
        "%2e%2e": f"{base}/" + rel.replace("..", "%2e%2e"),
        "%2E%2E": f"{base}/" + rel.replace("..", "%2E%2E"),
        "absolute": (outside / "s.json").resolve().as_uri(),
        "absolute pipeline": (outside / "pipelines" / "p.yaml").resolve().as_uri(),
        "symlink out": f"{base}/responses/link.json",
        "symlinked pipeline": f"{base}/pipelines/link.yaml",
        "not open, not a file": "untitled:Untitled-9",
    }


async def test_every_command_refuses_uris_outside_the_workspace(workspace: Path,
                                                                secret: Path) -> None:
    async with running_server(workspace) as ed:
        assert ed.server_capabilities is not None
        provider = ed.server_capabilities.execute_command_provider
        assert provider is not None
        commands = list(provider.commands)
        assert len(commands) >= 4
        for command in commands:
            for what, uri in _bad_uris(workspace, secret).items():
                with pytest.raises(JsonRpcException) as info:
                    await _run(ed, command, {"uri": uri, "range": A_RANGE})
                error = info.value
                assert error.code == INVALID_PARAMS, (command, what, error)
                assert error.message.startswith(uri) or uri in error.message, (command, what)
                assert RULE in error.message, (command, what, error.message)
                assert SECRET not in error.message and error.data is None
        # nothing was shown, applied or otherwise sent on behalf of those URIs
        assert ed.applied_edits == []
        assert all(SECRET not in str(m) for m in ed.client.messages)
        assert all(SECRET not in str(d) for ds in ed.client.diagnostics.values() for d in ds)


async def test_the_refusals_name_the_rule_and_the_reason(workspace: Path, secret: Path) -> None:
    bad = _bad_uris(workspace, secret)
    expected = {
        "dot-dot": "has a '..' segment",
        "%2e%2e": "has a '..' segment",
        "absolute": "is outside the workspace folders",
        "symlink out": "leads outside the workspace folders through a symlink",
        "not open, not a file": "is not an open document and not a file: URI",
    }
    async with running_server(workspace) as ed:
        for what, reason in expected.items():
            with pytest.raises(JsonRpcException) as info:
                await _run(ed, "budgetlens.showHierarchyContext", {"uri": bad[what]})
            assert info.value.message == f"{bad[what]} {reason}; {RULE}"


async def test_files_inside_and_open_documents_are_still_served(workspace: Path,
                                                                secret: Path) -> None:
    inside = workspace / "responses" / "truncated.json"
    async with running_server(workspace) as ed:
        # a closed file inside the workspace is read from disk
        result = await _run(ed, "budgetlens.showHierarchyContext",
                            {"uri": inside.resolve().as_uri()})
        assert result["cut"] is not None and result["completePart"]
        # an open document is the editor's buffer, wherever it lives (the disk is not read)
        uri = (secret / "s.json").resolve().as_uri()
        ed.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="json", version=1,
                                                 text='{"buffer": [1, 2')))
        result = await _run(ed, "budgetlens.showHierarchyContext", {"uri": uri})
        assert result["completePart"] == '{"buffer": [1, 2]}'
        assert SECRET not in str(result)


async def test_lenses_hover_and_actions_answer_nothing_for_files_outside(
        workspace: Path, secret: Path) -> None:
    """The same rule for the other requests that read a document: a closed file outside
    the workspace gets no lens (which would show its token count), hover or action."""
    (secret / "prompt.txt").write_text(f"{SECRET} " * 50, "utf-8")
    os.symlink(secret / "prompt.txt", workspace / "prompts" / "link.txt")
    at = types.Position(line=5, character=6)  # on max_output_tokens of p.yaml
    outside = [(secret / "prompt.txt").resolve().as_uri(),
               f"{workspace.resolve().as_uri()}/prompts/link.txt",
               (secret / "pipelines" / "p.yaml").resolve().as_uri(),
               f"{workspace.resolve().as_uri()}/pipelines/link.yaml"]
    async with running_server(workspace) as ed:
        for uri in outside:
            assert not await ed.client.text_document_code_lens_async(
                types.CodeLensParams(text_document=td(uri)))
            assert await ed.client.text_document_hover_async(
                types.HoverParams(text_document=td(uri), position=at)) is None
            actions = await ed.client.text_document_code_action_async(types.CodeActionParams(
                text_document=td(uri), range=types.Range(start=at, end=at),
                context=types.CodeActionContext(diagnostics=[])))
            assert not actions
        # the control: a prompt inside the workspace has its lens, a pipeline its hover
        inside = ed.uri("prompts/report.txt")
        lenses = await ed.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=td(inside)))
        assert lenses and "tokens" in str(lenses[0].command)
        pipeline = (workspace / "pipelines/long_report.yaml").read_text("utf-8")
        line = pipeline.split("\n").index("    max_output_tokens: 256")
        hover = await ed.client.text_document_hover_async(types.HoverParams(
            text_document=td(ed.uri("pipelines/long_report.yaml")),
            position=types.Position(line=line, character=6)))
        assert hover is not None


# --- clamp edits on a value shared through an alias ------------------------------------------

SHARED = """\
settings:
  max_context_tokens: 2000
  max_history_tokens: 0
  budget_safety_margin_tokens: 100

steps:
  - id: first
    type: call_model
    prompt_key: router
    user_parts:
      template: "Q: {question}"
    max_output_tokens: &out 9000

  - id: second
    type: call_model
    prompt_key: router
    user_parts:
      template: "Q again: {question} and {context}"
    max_output_tokens: *out
"""


def _overlaps(edit: types.WorkspaceEdit) -> list[tuple[str, types.TextEdit, types.TextEdit]]:
    """Pairs of TextEdits of one document whose ranges overlap (LSP forbids them)."""
    per_uri: dict[str, list[types.TextEdit]] = {}
    for change in edit.document_changes or []:
        assert isinstance(change, types.TextDocumentEdit)
        per_uri.setdefault(change.text_document.uri, []).extend(
            e for e in change.edits if isinstance(e, types.TextEdit))
    for uri, edits in (edit.changes or {}).items():
        per_uri.setdefault(uri, []).extend(edits)

    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    found = []
    for uri, edits in per_uri.items():
        for i, a in enumerate(edits):
            for b in edits[i + 1:]:
                a0, a1, b0, b1 = (key(a.range.start), key(a.range.end), key(b.range.start),
                                  key(b.range.end))
                if a0 < b1 and b0 < a1:  # share a character (touching, or two inserts at
                    found.append((uri, a, b))  # one place, is allowed)
    return found


def _fixed(diags: list[types.Diagnostic]) -> bool:
    return not {"BL050", "BL051"} & set(codes_of(diags))


async def test_fix_all_sends_no_overlapping_edits_for_a_shared_alias(workspace: Path) -> None:
    (workspace / "pipelines" / "shared.yaml").write_text(SHARED, "utf-8")
    async with running_server(workspace) as ed:
        uri = ed.open("pipelines/shared.yaml")
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL051" in codes_of(ds))
        diag = next(d for d in diags if d.code == "BL051")
        actions = await ed.client.text_document_code_action_async(types.CodeActionParams(
            text_document=td(uri), range=diag.range,
            context=types.CodeActionContext(diagnostics=diags,
                                            only=["source.fixAll.budgetlens"])))
        [fix] = [a for a in actions or [] if isinstance(a, types.CodeAction)]
        assert fix.edit is not None
        assert _overlaps(fix.edit) == []
        ed.apply(fix.edit)
        assert "&out" in ed.texts[uri] and "*out" in ed.texts[uri]
        await ed.wait_diagnostics(uri, _fixed)


async def test_clamp_all_sends_no_overlapping_edits_for_a_shared_alias(workspace: Path) -> None:
    (workspace / "pipelines" / "shared.yaml").write_text(SHARED, "utf-8")
    async with running_server(workspace) as ed:
        uri = ed.open("pipelines/shared.yaml")
        await ed.wait_diagnostics(uri, lambda ds: "BL051" in codes_of(ds))
        try:
            result = await _run(ed, "budgetlens.clampAll", {"uri": uri})
        except JsonRpcException:  # the test client failed to apply overlapping edits
            result = None
        assert len(ed.applied_edits) == 1
        assert _overlaps(ed.applied_edits[0].edit) == []
        assert result is not None and result["applied"] is True
        assert "&out" in ed.texts[uri] and "*out" in ed.texts[uri]
        await ed.wait_diagnostics(uri, _fixed)


def test_the_overlap_check_itself() -> None:
    def edit(*spans: tuple[int, int, int, int]) -> types.WorkspaceEdit:
        return types.WorkspaceEdit(changes={"file:///x": [types.TextEdit(
            range=types.Range(start=types.Position(line=a, character=b),
                              end=types.Position(line=c, character=d)), new_text="n")
            for a, b, c, d in spans]})
    assert _overlaps(edit((1, 5, 1, 9), (1, 5, 1, 9)))  # the same range twice
    assert _overlaps(edit((1, 5, 1, 9), (1, 8, 2, 0)))
    assert not _overlaps(edit((1, 5, 1, 9), (1, 9, 1, 12)))  # touching is fine
    assert not _overlaps(edit((3, 0, 3, 0), (3, 0, 3, 0)))  # two inserts at one place
    assert _overlaps(edit((1, 5, 1, 9), (1, 7, 1, 7)))  # an insert inside a replaced range
