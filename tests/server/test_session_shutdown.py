"""An edit and ``shutdown`` handled in the same turn of the loop (one read from the pipe):
no analysis starts on the stopped analysis thread, nothing is logged as failed, and a
request flushing the edits after it returns."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from budgetlens_lsp.session import Session
from tests.waiting import ANSWER_GUARD


async def test_an_edit_then_shutdown_in_one_turn_starts_no_analysis(
        caplog: pytest.LogCaptureFixture) -> None:
    calls: list[Any] = []

    def analyze(*args: Any) -> None:
        calls.append(args)

    session: Session[Any] = Session(analyze)
    with caplog.at_level(logging.ERROR):
        session.mark_dirty(["/ws/pipelines/a.yaml"])  # a didChange after a quiet moment
        session.shutdown()
        for _ in range(10):
            await asyncio.sleep(0.01)
        await asyncio.wait_for(session.flush(), ANSWER_GUARD)
    assert (session.analyses, calls) == (0, [])
    assert [r.getMessage() for r in caplog.records] == []
