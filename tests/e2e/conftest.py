"""Fixtures of the end-to-end language-server tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import copy_examples


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A private copy of ``examples/`` (tests edit its files freely)."""
    return copy_examples(tmp_path)
