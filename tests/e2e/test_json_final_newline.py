"""A cut JSON reply saved by an editor (a final newline added) still gets the cut diagnostic
(BL200) at the point where the reply stops, and the command's closed JSON keeps the partial
value. Real server over stdio."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from lsprotocol import types

from .harness import Editor, copy_examples, running_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

CUT = '{"reply": {"items": ["one", "two", "thr'   # 39 characters, all ASCII


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ed(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Editor]:
    root = copy_examples(tmp_path_factory.mktemp("json-newline"))
    (root / "responses/saved.json").write_text(CUT + "\n", "utf-8")
    (root / "responses/literal.json").write_text('{\n  "done": fal\n', "utf-8")
    (root / "responses/whole.json").write_text('{\n  "a": "x y"\n}\n', "utf-8")
    async with running_server(root) as editor:
        yield editor


async def _command(ed: Editor, uri: str) -> dict[str, object]:
    result = await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="budgetlens.showHierarchyContext", arguments=[{"uri": uri}]))
    assert isinstance(result, dict)
    return result


async def test_a_cut_string_saved_with_a_final_newline_gets_bl200_at_the_cut(
        ed: Editor) -> None:
    uri = ed.open("responses/saved.json", language_id="json")
    [d] = await ed.wait_diagnostics(uri)
    assert d.code == "BL200"
    assert d.severity == types.DiagnosticSeverity.Information
    # where the reply stops: line 0, after 'thr' (ASCII: the same in every encoding)
    assert d.range.start == d.range.end == types.Position(line=0, character=39)
    assert d.message.startswith("truncated JSON: cut inside a string at reply.items[2]")
    result = await _command(ed, uri)
    assert result["cut"] == {"line": 0, "character": 39, "path": "reply.items[2]",
                             "kind": "string", "offset": 39}
    assert result["jsonParsingSuccess"] is True and result["error"] is None
    assert result["completePart"] == '{"reply": {"items": ["one", "two", "thr"]}}'
    assert result["overlapContext"] == CUT
    assert str(result["text"]).endswith('      "thr<<<CUT>>>')


async def test_an_unsaved_buffer_ending_in_crlf_gets_bl200_too(ed: Editor) -> None:
    uri = ed.open("responses/saved.json", language_id="json")
    ed.replace_all(uri, '{"title": "Report", "body": "It was a long\r\n')
    [d] = await ed.wait_diagnostics(uri, lambda ds: any("body" in x.message for x in ds))
    assert d.code == "BL200"
    assert d.range.start == types.Position(line=0, character=42)
    assert d.message.startswith("truncated JSON: cut inside a string at body")
    result = await _command(ed, uri)
    assert json.loads(str(result["completePart"])) == {"title": "Report",
                                                       "body": "It was a long"}


async def test_a_cut_literal_with_a_final_newline_is_completed(ed: Editor) -> None:
    uri = ed.open("responses/literal.json", language_id="json")
    [d] = await ed.wait_diagnostics(uri)
    assert d.code == "BL200"
    assert d.range.start == types.Position(line=1, character=13)  # '  "done": fal'
    assert d.message.startswith(
        "truncated JSON: cut inside a literal (true, false or null) at done")
    result = await _command(ed, uri)
    assert result["completePart"] == '{\n  "done": false}'


async def test_a_whole_document_with_a_final_newline_has_no_diagnostic(ed: Editor) -> None:
    uri = ed.open("responses/whole.json", language_id="json")
    assert await ed.wait_diagnostics(uri, lambda ds: ds == []) == []
    result = await _command(ed, uri)
    assert result["cut"] is None and result["jsonParsingSuccess"] is True
    assert result["completePart"] == '{\n  "a": "x y"\n}'
