"""The test client itself: a wait for diagnostics that gives up must leave the client working.

pytest-lsp keeps one future per awaited notification. A wait that cancelled that future on
timeout left it registered, and a push arriving before the next wait then failed inside the
client, which terminated the server: "Client has been stopped" in a later, unrelated step of
a test under load (CI, test_prompt_typing). Here the push comes while nobody waits.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from .harness import TIMEOUT, codes_of, copy_examples, running_server, wait_published


async def test_a_wait_that_gives_up_leaves_the_client_working(tmp_path: Path) -> None:
    root = copy_examples(tmp_path)
    async with running_server(root) as ed:
        with pytest.raises(AssertionError, match="never matched"):
            await wait_published(ed.client, (root / "nowhere.yaml").as_uri(), timeout=0.05)
        uri = ed.open("pipelines/long_report.yaml")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT
        while uri not in ed.client.diagnostics:  # no wait registered: only the push lands
            assert not ed.client.stopped, "the client stopped on the push"
            assert loop.time() < deadline, "no diagnostics pushed"
            await asyncio.sleep(0.02)
        assert codes_of(list(ed.client.diagnostics[uri])) == ["BL050"]
        assert ed.client.error is None and not ed.client.stopped
        ed.replace_all(uri, ed.texts[uri] + "\n")  # and the client still sends
        await ed.wait_diagnostics(uri, lambda ds: codes_of(ds) == ["BL050"])
