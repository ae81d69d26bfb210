"""The first indexing's ``$/progress`` begins with the index's own count, not a walk.

The index reports (checked, to check) as it goes. The progress begins with the first
report of a round of more than ``LARGE_WORKSPACE`` pipelines; reports that arrive while the
client creates the token are not lost; the end follows the last report."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

from lsprotocol import types

from budgetlens_lsp.features import lifecycle
from budgetlens_lsp.features.diagnostics import Analysis
from budgetlens_lsp.features.state import ClientFeatures, ServerState
from budgetlens_lsp.session import Session
from tests.waiting import until


class Progress:
    """The server side of ``$/progress`` (pygls' ``work_done_progress``), recorded. The
    client's answer to ``create`` waits until the test releases it."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.created = asyncio.Event()
        self.fail = False

    async def create_async(self, token: str) -> None:
        self.sent.append("create")
        await self.created.wait()
        if self.fail:
            raise RuntimeError("the client refused")

    def begin(self, token: str, value: types.WorkDoneProgressBegin) -> None:
        self.sent.append(f"begin {value.message}")

    def report(self, token: str, value: types.WorkDoneProgressReport) -> None:
        self.sent.append(f"report {value.message} {value.percentage}%")

    def end(self, token: str, value: types.WorkDoneProgressEnd) -> None:
        self.sent.append("end")


def _context(progress: Progress) -> ServerState:
    caps = types.ClientCapabilities(window=types.WindowClientCapabilities(
        work_done_progress=True))
    return ServerState(cast(Any, SimpleNamespace(work_done_progress=progress)),
                       Session(cast(Any, None)), Analysis(), client=ClientFeatures(caps))


async def _handed_over() -> None:
    """Return once the reports made so far reached the loop (they come in order)."""
    reached = asyncio.Event()
    asyncio.get_running_loop().call_soon_threadsafe(reached.set)
    await reached.wait()


async def test_a_small_round_shows_no_progress() -> None:
    progress = Progress()
    indexing = lifecycle.IndexProgress(_context(progress))
    indexing.report(0, lifecycle.LARGE_WORKSPACE)
    indexing.report(lifecycle.LARGE_WORKSPACE, lifecycle.LARGE_WORKSPACE)
    await _handed_over()
    await indexing.end()
    assert progress.sent == []


async def test_a_large_round_begins_reports_and_ends() -> None:
    progress = Progress()
    indexing = lifecycle.IndexProgress(_context(progress))
    indexing.report(0, 40)
    await until(lambda: progress.sent == ["create"], "the token asked for")
    indexing.report(25, 40)  # while the client creates the token
    await _handed_over()
    progress.created.set()
    await until(lambda: len(progress.sent) == 3, "the begin and the report it held")
    indexing.report(40, 40)
    await _handed_over()
    await indexing.end()
    assert progress.sent == ["create", "begin 0/40", "report 25/40 62%", "report 40/40 100%",
                             "end"]


async def test_a_refused_token_sends_nothing_more() -> None:
    progress = Progress()
    progress.fail = True
    progress.created.set()
    indexing = lifecycle.IndexProgress(_context(progress))
    indexing.report(0, 40)
    indexing.report(40, 40)
    await _handed_over()
    await indexing.end()
    assert progress.sent == ["create"]
