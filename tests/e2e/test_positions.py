"""Position encodings: utf-16 (default), utf-8 and utf-32 when the client offers them.

A diagnostic sits after CJK characters and an emoji (🏔️ is U+1F3D4 + U+FE0F: 3 UTF-16
units, 7 UTF-8 bytes) on the same line; its column must be counted in the negotiated unit.
The expected columns are computed here from the line's text with Python's codecs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from .harness import caps, find, running_server, td, units

CJK_PIPELINE = """\
extends: base.yaml
steps:
  - id: ask
    type: call_model
    prompt_key: multilingual
    user_parts:
      template: "参考資料🏔️ です {context x"
    max_output_tokens: 100
"""


@pytest.mark.parametrize(("offered", "negotiated"), [
    (None, "utf-16"),
    (["utf-8"], "utf-8"),
    (["utf-32", "utf-16"], "utf-32"),
])
async def test_ranges_after_cjk_and_emoji_use_the_negotiated_encoding(
        workspace: Path, offered: list[str] | None, negotiated: str) -> None:
    (workspace / "pipelines/cjk.yaml").write_text(CJK_PIPELINE, "utf-8")
    line_no, col = find(CJK_PIPELINE, "{context")
    line = CJK_PIPELINE.split("\n")[line_no]
    async with running_server(workspace, capabilities=caps(encodings=offered)) as ed:
        assert ed.encoding == negotiated
        uri = ed.open("pipelines/cjk.yaml")
        diags = await ed.wait_diagnostics(uri, lambda ds: any(d.code == "BL043" for d in ds))
        [d] = [d for d in diags if d.code == "BL043"]
        start = units(line[:col], negotiated)
        assert d.range.start == types.Position(line=line_no, character=start)
        assert d.range.end == types.Position(line=line_no, character=start + 1)
        # hover positions come back the other way: on the key after the emoji line
        hover = await ed.client.text_document_hover_async(types.HoverParams(
            text_document=td(uri), position=types.Position(
                line=line_no + 1, character=units("    max_output", negotiated))))
        assert hover is not None and "max_output_tokens" in str(hover.contents)
    # sanity of the fixture: the three encodings really differ on this line
    assert len({units(line[:col], e) for e in ("utf-8", "utf-16", "utf-32")}) == 3


async def test_incremental_edit_after_an_emoji_in_utf16_lands_on_the_right_character(
        workspace: Path) -> None:
    """The client sends a UTF-16 range after the emoji; the server's buffer must match."""
    (workspace / "pipelines/cjk.yaml").write_text(CJK_PIPELINE, "utf-8")
    line_no, col = find(CJK_PIPELINE, " x\"")
    line = CJK_PIPELINE.split("\n")[line_no]
    async with running_server(workspace) as ed:
        uri = ed.open("pipelines/cjk.yaml")
        await ed.wait_diagnostics(uri, lambda ds: any(d.code == "BL043" for d in ds))
        at = units(line[:col], "utf-16")
        ed.versions[uri] += 1
        ed.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri,
                                                                version=ed.versions[uri]),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=line_no, character=at),
                                  end=types.Position(line=line_no, character=at + 2)),
                text="}")]))
        # "{context x" became "{context}": a valid placeholder, so BL043 disappears
        await ed.wait_diagnostics(uri, lambda ds: all(d.code != "BL043" for d in ds))
