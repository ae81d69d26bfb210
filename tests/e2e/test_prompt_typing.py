"""A typing burst in a prompt many pipelines share, over stdio (issue 12): the prompt's pushes
only move forward in version and the last is the last version's; every dependent ends with
the diagnostics of the last text (as a fresh analysis of it gives); and publishes are
bounded by analyses: a delivered analysis pushes each dependent at most once, and always the
edited prompt, so no dependent is pushed more often than the prompt.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types

from budgetlens_lsp.features import diagnostics
from budgetlens_lsp.features.state import Analysis
from budgetlens_lsp.workspace_index import IndexMode, Snapshot, norm

from .harness import TIMEOUT, caps, codes_of, running_server

DEPENDENTS = 12
STEP = """\
  - id: step_{i}
    type: call_model
    prompt_key: {prompt}
    user_parts:
      template: "Part {i}: {{topic}}"
    max_tokens: {out}
"""


def _prompt(n: int) -> str:
    return "Follow the house style. " * 1300 + "rule " * n + "\n"


def _dependent(k: int) -> str:
    steps = "".join(STEP.format(i=i, prompt="shared" if i == 1 else "chat", out=300 + k)
                    for i in range(3))
    return f"extends: base.yaml\nsteps:\n{steps}"


async def test_typing_in_a_shared_prompt(workspace: Path) -> None:
    (workspace / "prompts/shared.txt").write_text(_prompt(0), "utf-8")
    deps = [workspace / f"pipelines/dep_{k:02d}.yaml" for k in range(DEPENDENTS)]
    for k, path in enumerate(deps):
        path.write_text(_dependent(k), "utf-8")
    dep_uris = {p.resolve().as_uri() for p in deps}
    async with running_server(workspace, capabilities=caps()) as ed:
        pushed: list[tuple[str, int | None, list[types.Diagnostic]]] = []
        features = ed.client.protocol.fm.features
        keep = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

        def record(*args: Any) -> None:  # every push, in order (then pytest-lsp's own)
            params: types.PublishDiagnosticsParams = args[-1]
            pushed.append((params.uri, params.version, list(params.diagnostics)))
            keep(*args)
        features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record

        uri = ed.open("prompts/shared.txt", _prompt(0), "plaintext")
        await ed.wait_diagnostics(uri, lambda ds: "BL050" in codes_of(ds)
                                  or "BL052" in codes_of(ds))
        await ed.client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))  # all analysed
        mark = len(pushed)
        for n in range(1, 31):  # a keystroke every 20 ms
            ed.replace_all(uri, _prompt(n))
            await asyncio.sleep(0.02)
        last = ed.versions[uri]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT
        while not any(u == uri and v == last for u, v, _ in pushed):
            assert loop.time() < deadline, f"version {last} never pushed"
            await asyncio.sleep(0.05)
        await ed.client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        await asyncio.sleep(0.5)
    burst = pushed[mark:]
    versions = [v for u, v, _ in burst if u == uri]
    assert versions == sorted(versions, key=lambda v: v or 0) and versions[-1] == last
    assert len(versions) <= 30  # never more pushes of the prompt than versions typed
    for dep in dep_uris:
        assert sum(1 for u, _, _ in burst if u == dep) <= len(versions)
    # the last push of every file is what a fresh analysis of the final text shows
    prompt = norm(workspace / "prompts/shared.txt")
    expected = diagnostics.analyze(
        Analysis(), Snapshot(overlay={prompt: _prompt(30)}, roots=(norm(workspace),)),
        frozenset(), IndexMode.FULL, None)
    want = {p.uri: [d.message for d in p.diagnostics] for p in expected}
    final: dict[str, list[str]] = {}
    for u, _, diags in pushed:
        final[u] = [d.message for d in diags]
    for dep in dep_uris:
        assert want[dep] and final[dep] == want[dep], dep
    assert final[uri] == want[uri]
