"""Truncated JSON buffers: the cut-point diagnostic, its code action, and the
``budgetlens.showHierarchyContext`` command's result."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .harness import Editor, RecordedClient, copy_examples, running_server, td, units

# One server for the module: each test works on its own document.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ed(
        recorded: RecordedClient,
        tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    root = copy_examples(tmp_path_factory.mktemp("json"))
    (root / "responses/complete.json").write_text('{"a": [1, 2]}\n', "utf-8")
    (root / "responses/edited.json").write_text(
        (root / "responses/truncated.json").read_text("utf-8"), "utf-8")
    async with running_server(root, recorded=recorded) as editor:
        yield editor

CUT_PATH = "document.sections[1].content"


def _end(text: str, encoding: str) -> types.Position:
    lines = text.split("\n")
    return types.Position(line=len(lines) - 1, character=units(lines[-1], encoding))


async def _command(ed: Editor, *arguments: object) -> dict[str, object]:
    result = await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="budgetlens.showHierarchyContext", arguments=list(arguments)))
    assert isinstance(result, dict)
    return result


async def test_cut_point_diagnostic_and_its_code_action(ed: Editor) -> None:
    workspace = ed.root
    text = (workspace / "responses/truncated.json").read_text("utf-8")
    uri = ed.open("responses/truncated.json", language_id="json")
    [d] = await ed.wait_diagnostics(uri)
    assert d.severity == types.DiagnosticSeverity.Information
    assert d.range.start == d.range.end == _end(text, ed.encoding)
    assert CUT_PATH in d.message and "inside a string" in d.message
    actions = await ed.client.text_document_code_action_async(types.CodeActionParams(
        text_document=td(uri), range=d.range,
        context=types.CodeActionContext(diagnostics=[d])))
    [action] = actions or []
    assert isinstance(action, types.CodeAction) and action.command is not None
    assert action.command.command == "budgetlens.showHierarchyContext"
    result = await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=action.command.command, arguments=action.command.arguments))
    assert result["cut"]["path"] == CUT_PATH


async def test_hierarchy_command_returns_marked_text_cut_and_closed_json(ed: Editor) -> None:
    workspace = ed.root
    text = (workspace / "responses/truncated.json").read_text("utf-8")
    content = text[text.rindex('"content": "') + len('"content": "'):]
    uri = ed.open("responses/truncated.json", language_id="json")
    result = await _command(ed, {"uri": uri})
    end = _end(text, "utf-16")
    assert result["cut"] == {"line": end.line, "character": end.character, "path": CUT_PATH,
                             "kind": "string", "offset": len(text)}
    assert isinstance(result["text"], str)
    assert result["text"].endswith(content + "<<<CUT>>>")
    assert result["jsonParsingSuccess"] is True
    closed = json.loads(str(result["completePart"]))
    assert closed["document"]["sections"][1]["content"] == content
    assert closed["document"]["metadata"]["author"] == "John Doe"
    assert text.endswith(str(result["overlapContext"])) and result["overlapContext"]
    assert result["budget"] == 1000


async def test_hierarchy_command_uses_unsaved_text_and_the_budget_argument(ed: Editor) -> None:
    workspace = ed.root
    text = (workspace / "responses/edited.json").read_text("utf-8")
    cut_early = text[:text.index('"John Doe"') + len('"Jo')]
    uri = ed.open("responses/edited.json", language_id="json")
    ed.replace_all(uri, cut_early)
    result = await _command(ed, {"uri": uri, "budget": 0})
    [d] = await ed.wait_diagnostics(uri, lambda ds: any("author" in x.message for x in ds))
    assert result["cut"]["path"] == "document.metadata.author"
    assert result["budget"] == 0
    assert "My Document" not in str(result["text"])  # budget 0: other values are summarised
    assert str(result["text"]).endswith("<<<CUT>>>")
    assert d.range.start == _end(cut_early, "utf-16")


async def test_complete_json_has_no_diagnostic_and_no_cut(ed: Editor) -> None:
    uri = ed.open("responses/complete.json", language_id="json")
    result = await _command(ed, {"uri": uri})
    assert await ed.wait_diagnostics(uri, lambda ds: ds == []) == []
    assert result["cut"] is None and result["jsonParsingSuccess"] is True
    assert json.loads(str(result["completePart"])) == {"a": [1, 2]}


INVALID_ARGUMENTS: list[list[object]] = [
    [],
    [{"budget": 10}],
    [{"uri": "file:///nowhere/missing.json"}],
    [{"uri": "RESPONSE", "budget": -1}],
    [{"uri": "RESPONSE", "budget": "many"}],
    [{"uri": "RESPONSE"}, {"uri": "RESPONSE"}],
    [42],
]


async def test_invalid_arguments_are_an_lsp_error_and_the_server_goes_on(ed: Editor) -> None:
    uri = ed.uri("responses/truncated.json")
    for arguments in INVALID_ARGUMENTS:
        args = [{**a, "uri": uri} if isinstance(a, dict) and a.get("uri") == "RESPONSE"
                else a for a in arguments]
        with pytest.raises(JsonRpcException):
            await _command(ed, *args)
    # and the server still answers
    assert (await _command(ed, {"uri": uri}))["cut"]["path"] == CUT_PATH


async def test_an_untitled_json_buffer_gets_the_diagnostic_and_the_command(ed: Editor) -> None:
    text = '{"reply": {"items": ["one", "two", "thr'
    uri = "untitled:Untitled-1"
    ed.texts[uri], ed.versions[uri] = text, 1
    ed.client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="json", version=1,
                                             text=text)))
    [d] = await ed.wait_diagnostics(uri)
    assert d.range.start == _end(text, "utf-16") and "reply.items[2]" in d.message
    result = await _command(ed, {"uri": uri})
    assert result["cut"]["path"] == "reply.items[2]"
    assert json.loads(str(result["completePart"])) == {"reply": {"items": ["one", "two",
                                                                           "thr"]}}
    ed.close(uri)
    assert await ed.wait_diagnostics(uri, lambda ds: ds == []) == []
    with pytest.raises(JsonRpcException):  # closed and not a file: nothing to read
        await _command(ed, {"uri": uri})
