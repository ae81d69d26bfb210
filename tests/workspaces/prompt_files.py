"""What the CLI tests of prompt files share: each runs in its own empty folder.

Import :func:`clean_env` into a test module (and name it in ``__all__``) to use it there.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Run from ``tmp_path``, with no result cache and no limits policy of the machine."""
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    monkeypatch.setenv("BUDGETLENS_NO_CACHE", "1")
    monkeypatch.chdir(tmp_path)
