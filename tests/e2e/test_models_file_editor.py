"""A workspace's models.json in the editor, over stdio: created on disk, it re-checks the
open pipeline (its window now from models.json, with the place in the message's related
information and in the model hover); edited in a buffer, it re-checks again. By hand: empty
prompt, format overhead 10, context 1000, output 500, margin 90: a total of 1,600."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from lsprotocol import types

from tests.workspaces.models import ANSWER_PIPELINE as PIPELINE
from tests.workspaces.models import model_workspace

from .harness import Editor, caps, codes_of, find, running_server, td

pytestmark = pytest.mark.asyncio(loop_scope="module")

LOWERED = '{"models": {\n  "gpt-4o": {"window": 1500}\n}}\n'


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ed(tmp_path_factory: pytest.TempPathFactory,
             ) -> AsyncIterator[Editor]:
    root = model_workspace(tmp_path_factory.mktemp("models_file"), json.dumps(
        {"model": "gpt-4o", "format_overhead_tokens": 10, "development": True}), PIPELINE)
    async with running_server(root, capabilities=caps()) as editor:
        yield editor


async def test_a_models_json_rechecks_the_open_pipeline(ed: Editor) -> None:
    uri = ed.open("pipelines/p.yaml")
    await ed.wait_diagnostics(uri, lambda ds: ds == [])  # 1,600 fits 128,000
    ed.path("models.json").write_text(LOWERED, "utf-8")
    ed.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=ed.uri("models.json"),
                                 type=types.FileChangeType.Created)]))
    [over] = await ed.wait_diagnostics(uri, lambda ds: "BL050" in codes_of(ds))
    assert "= 1600 > 1500" in over.message
    # the window's related information points at the value in models.json (line 2, col 24)
    related = [(r.location.uri, r.location.range.start.line, r.location.range.start.character,
                r.message) for r in over.related_information or []
               if r.message.startswith("window")]
    assert related == [(ed.uri("models.json"), 1, 23,
                        "window: 1500 from model gpt-4o (models.json:2:24)")]
    # the hover on config.json's model says where its window comes from
    config = ed.open("config.json", language_id="json")
    line, col = find(ed.texts[config], "gpt-4o")
    hover = await ed.client.text_document_hover_async(types.HoverParams(
        text_document=td(config), position=types.Position(line=line, character=col + 1)))
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "- window: 1,500 tokens" in hover.contents.value
    assert "- set by window: models.json:2:24" in hover.contents.value
    # edited in a buffer (not saved): the pipeline is checked against the buffer
    models = ed.open("models.json", language_id="json")
    ed.replace_all(models, LOWERED.replace("1500", "2000"))
    await ed.wait_diagnostics(uri, lambda ds: ds == [])
    # a wrong value: BL069 at it, in models.json; the registry's window is used again
    ed.replace_all(models, LOWERED.replace("1500", "0"))
    [bad] = await ed.wait_diagnostics(models, lambda ds: "BL069" in codes_of(ds))
    assert (bad.range.start.line, bad.range.start.character) == (1, 23)
    assert bad.message == ("models.json models.gpt-4o.window must be a whole number > 0,"
                           " got 0; the registry's value is used")
    assert list(ed.client.diagnostics[uri]) == []
