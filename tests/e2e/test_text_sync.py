"""The server's copy of a buffer is the editor's text.

A buffer holds U+2028, U+2029 and U+0085 inside strings (the LSP does not end lines there;
``str.splitlines`` does). Fifty incremental edits follow on later lines, with ranges in
UTF-16 units as an editor sends them. The diagnostics and lenses (and, for JSON, the
hierarchy context) must then be those of the same final text opened fresh.

The test's own editor model applies each edit by offsets into its text, with line and
column counted here (``\\n`` is the only line break in these texts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from .harness import Editor, caps, codes_of, running_server, td, units

ODD = "\u2028\u2029\u0085"

PIPELINE = f"""\
# budgets of a support answer
settings:
  max_context_tokens: 2000
  max_history_tokens: 0
  budget_safety_margin_tokens: 100

steps:
  - id: first
    type: call_model
    prompt_key: router
    user_parts:
      template: "Q{ODD[0]}: {{question}}{ODD[1]} then{ODD[2]} answer"
    max_output_tokens: 100

  - id: second
    type: call_model
    prompt_key: router
    user_parts:
      template: 'Again{ODD}: {{question}} and {{context}}'
    max_output_tokens: 100
"""

JSON_BUFFER = ('{"title": "odd' + ODD + 'characters",\n'
               ' "note": "line\u2028sep and para\u2029sep and nel\u0085here",\n'
               ' "items": [\n'
               '  {"id": 0, "text": "start"}\n')


class Buffer:
    """The editor's side of one open document: its text, version, and edits."""

    def __init__(self, ed: Editor, uri: str) -> None:
        self.ed, self.uri = ed, uri

    @property
    def text(self) -> str:
        return self.ed.texts[self.uri]

    def _pos(self, offset: int) -> types.Position:
        text = self.text
        line = text.count("\n", 0, offset)
        start = text.rfind("\n", 0, offset) + 1
        return types.Position(line=line, character=units(text[start:offset],
                                                         self.ed.encoding))

    def edit(self, start: int, end: int, new: str) -> None:
        """Replace ``text[start:end]`` by ``new`` with one ranged didChange."""
        rng = types.Range(start=self._pos(start), end=self._pos(end))
        self.ed.texts[self.uri] = self.text[:start] + new + self.text[end:]
        self.ed.versions[self.uri] += 1
        self.ed.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(
                uri=self.uri, version=self.ed.versions[self.uri]),
            content_changes=[types.TextDocumentContentChangePartial(range=rng, text=new)]))

    def replace(self, old: str, new: str, nth: int = 0) -> None:
        at = -1
        for _ in range(nth + 1):
            at = self.text.index(old, at + 1)
        self.edit(at, at + len(old), new)


async def _state(ed: Editor, uri: str) -> tuple[list[types.Diagnostic], list[types.CodeLens]]:
    report = await ed.client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=td(uri)))
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport), report
    lenses = await ed.client.text_document_code_lens_async(types.CodeLensParams(
        text_document=td(uri)))
    return list(report.items), list(lenses or [])


def _reopen(ed: Editor, uri: str, language_id: str) -> None:
    """Close the buffer and open its final text anew (what a fresh editor would send)."""
    text = ed.texts[uri]
    ed.close(uri)
    ed.texts[uri] = text
    ed.versions[uri] = 1
    ed.client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language_id, version=1,
                                             text=text)))


def _pipeline_edits(buf: Buffer) -> None:
    """Fifty edits below the odd characters: numbers, comment lines, a key renamed and
    restored, a line split in two and joined again."""
    for i in range(50):
        op = i % 5
        if op == 0:  # the first step's output limit
            line_start = buf.text.index("max_output_tokens: ", buf.text.index("id: first"))
            value_at = line_start + len("max_output_tokens: ")
            value_end = buf.text.index("\n", value_at)
            buf.edit(value_at, value_end, str(100 + 37 * i))
        elif op == 1:  # a comment line inserted before the second step
            at = buf.text.index("  - id: second")
            buf.edit(at, at, f"  # note {i}\n")
        elif op == 2:  # the second step's output limit, typed one digit at a time
            line_start = buf.text.index("max_output_tokens: ", buf.text.index("id: second"))
            value_at = line_start + len("max_output_tokens: ")
            value_end = buf.text.index("\n", value_at)
            buf.edit(value_at, value_end, "")
            for digit in str(200 + 11 * i):
                buf.edit(value_at, value_at, digit)
                value_at += 1
        elif op == 3:  # split "type: call_model" of the second step over two lines, join again
            at = buf.text.index("type: call_model", buf.text.index("id: second"))
            buf.edit(at + 5, at + 6, "\n      ")
            buf.edit(at + 5, at + 5 + len("\n      "), " ")
        else:  # a comment line removed again (an edit that spans a line break)
            at = buf.text.index(f"  # note {i - 3}\n")
            buf.edit(at, at + len(f"  # note {i - 3}\n"), "")
    # the final state: the second step over budget, and a word after the odd characters
    # (and an emoji) changed on their own line: its column counts them in the encoding's units
    buf.replace(f"max_output_tokens: {200 + 11 * 47}", "max_output_tokens: 7000")
    buf.replace(" answer\"", " \U0001F600 reply\"")
    buf.replace(" reply\"", " response\"")


@pytest.mark.parametrize("encodings", [None, ["utf-8"]], ids=["utf-16", "utf-8"])
async def test_pipeline_with_odd_characters_after_fifty_edits_is_the_same_as_fresh(
        workspace: Path, encodings: list[str] | None) -> None:
    (workspace / "pipelines" / "odd.yaml").write_text(PIPELINE, "utf-8")
    async with running_server(workspace, capabilities=caps(pull=True,
                                                           encodings=encodings)) as ed:
        assert ed.encoding == ("utf-8" if encodings else "utf-16")
        uri = ed.open("pipelines/odd.yaml")
        buf = Buffer(ed, uri)
        first = await _state(ed, uri)
        assert "BL001" not in codes_of(first[0])
        _pipeline_edits(buf)
        final_text = buf.text
        assert final_text.count(ODD[0]) == 2 and "max_output_tokens: 7000" in final_text
        assert f'{ODD[2]} \U0001F600 response"' in final_text
        edited = await _state(ed, uri)
        _reopen(ed, uri, "yaml")
        fresh = await _state(ed, uri)
    # the planned final state: valid YAML, the second step over budget, a lens per step
    assert "BL001" not in codes_of(fresh[0])
    assert [d.code for d in fresh[0] if d.code == "BL050"] == ["BL050"]
    assert sum(1 for lens in fresh[1] if lens.command and "7000" in lens.command.title) == 1
    assert edited[0] == fresh[0]
    assert edited[1] == fresh[1]


def _json_edits(buf: Buffer) -> None:
    """Fifty edits after the odd characters: items appended, numbers retyped, a string
    cut short at the end (the buffer ends truncated)."""
    for i in range(1, 51):
        op = i % 4
        if op in (1, 2):  # a new item at the end
            end = len(buf.text)
            buf.edit(end, end, f'  ,{{"id": {i}, "text": "item {i}"}}\n')
        elif op == 3:  # retype the last item's id
            at = buf.text.rindex('"id": ') + len('"id": ')
            end = buf.text.index(",", at)
            buf.edit(at, end, str(1000 + i))
        else:  # change a text in the middle, across the line break after it
            at = buf.text.index('"text": "start') + len('"text": "')
            buf.edit(at, buf.text.index("\n", at) + 1, f'start{i}"}}\n')
    end = len(buf.text)
    buf.edit(end - len('"}\n'), end, " and the answer was cut")
    buf.replace("nel\u0085here", "nel\u0085there")  # on the odd characters' own line


async def test_json_buffer_with_odd_characters_after_fifty_edits_is_the_same_as_fresh(
        workspace: Path) -> None:
    async with running_server(workspace, capabilities=caps(pull=True)) as ed:
        uri = ed.open("responses/odd.json", JSON_BUFFER, language_id="json")
        buf = Buffer(ed, uri)
        _json_edits(buf)
        assert buf.text.endswith("and the answer was cut")
        edited = await _state(ed, uri)
        edited_context: Any = await ed.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="budgetlens.showHierarchyContext",
                                       arguments=[{"uri": uri}]))
        _reopen(ed, uri, "json")
        fresh = await _state(ed, uri)
        fresh_context: Any = await ed.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="budgetlens.showHierarchyContext",
                                       arguments=[{"uri": uri}]))
    [cut] = [d for d in fresh[0] if d.code == "BL200"]
    assert "items[" in cut.message and fresh_context["error"] is None
    last_line = buf.text.count("\n")
    assert cut.range.start.line == last_line
    assert edited[0] == fresh[0]
    assert edited_context == fresh_context
    assert fresh_context["completePart"].endswith('and the answer was cut"}]}')
