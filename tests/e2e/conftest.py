"""Fixtures of the end-to-end language-server tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
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


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Servers started by the tests write their command views (features/views.py) into a
    private cache folder, never the user's: ``XDG_CACHE_HOME`` (and ``LOCALAPPDATA``)."""
    folder = tmp_path_factory.mktemp("cache")
    saved = {k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "LOCALAPPDATA")}
    os.environ["XDG_CACHE_HOME"] = os.environ["LOCALAPPDATA"] = str(folder)
    try:
        yield folder
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
