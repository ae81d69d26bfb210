"""Fixtures of the end-to-end language-server tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import RECORDED_CLIENTS, RecordedClient, copy_examples


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A private copy of ``examples/`` (tests edit its files freely)."""
    return copy_examples(tmp_path)


@pytest.fixture(scope="module", params=RECORDED_CLIENTS, ids=str)
def recorded(request: pytest.FixtureRequest) -> RecordedClient:
    """Each client recorded in tests/e2e/clients/ in turn (module scope: a module-scoped server
    built on it starts once per client)."""
    client: RecordedClient = request.param
    return client
