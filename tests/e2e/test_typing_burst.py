"""A typing burst over stdio (issue 12): the diagnostics pushed for a document only move
forward in version, and the last push is the last version's.

The pipeline is made big enough (120 steps) that an analysis takes longer than the gap
between two keystrokes, so edits arrive while analyses run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types

from .harness import TIMEOUT, caps, codes_of, running_server

STEP = """\
  - id: step_{i:03d}
    type: call_model
    prompt_key: report
    user_parts:
      template: "Part {i}: {{topic}}"
    max_output_tokens: {out}
"""


async def test_pushes_under_a_typing_burst_only_move_forward(workspace: Path) -> None:
    steps = "".join(STEP.format(i=i, out=900 + i) for i in range(120))
    text = f"extends: base.yaml\nsettings:\n  max_context_tokens: 7000\nsteps:\n{steps}"
    (workspace / "pipelines/typing.yaml").write_text(text, "utf-8")
    async with running_server(workspace, capabilities=caps()) as ed:
        pushed: list[tuple[str, int | None]] = []

        features = ed.client.protocol.fm.features
        keep = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

        def record(*args: Any) -> None:  # every push, in order (then pytest-lsp's own)
            params: types.PublishDiagnosticsParams = args[-1]
            pushed.append((params.uri, params.version))
            keep(*args)
        features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record

        uri = ed.open("pipelines/typing.yaml", text)
        await ed.wait_diagnostics(uri, lambda ds: "BL050" in codes_of(ds))
        for n in range(40):  # a keystroke every 20 ms
            ed.replace_all(uri, text.replace("max_context_tokens: 7000",
                                             f"max_context_tokens: {7000 + n}"))
            await asyncio.sleep(0.02)
        last = ed.versions[uri]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT
        while (uri, last) not in pushed:
            assert loop.time() < deadline, f"version {last} never pushed: {pushed}"
            await asyncio.sleep(0.05)
        # a request flushes anything still pending; nothing older may follow
        await ed.client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        await asyncio.sleep(0.5)
    versions = [v for u, v in pushed if u == uri]
    assert all(v is not None for v in versions)
    assert versions == sorted(versions, key=lambda v: v or 0), versions
    assert versions[-1] == last
