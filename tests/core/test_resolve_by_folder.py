"""``RunFiles(resolve_by_folder=True)`` (the language server's and the CLI's way) answers as
``os.path.realpath`` does also for paths that are not normalised: ``..`` after a missing
folder, a file or a link, and a NUL in the path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from budgetlens.files import DiskFiles, RunFiles, is_inside


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "file.txt").write_text("x")
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", ws / "link")
    os.symlink(tmp_path / "outside", ws / "d" / "inner")
    return ws


@pytest.mark.parametrize("rel", ["missing/../link", "file.txt/../link", "d/../link",
                                 "link/../d", "d/inner/../file.txt", "d/./inner",
                                 "d//inner", "link/.."])
def test_the_answers_of_realpath(tree: Path, rel: str) -> None:
    path = f"{tree}/{rel}"
    files = RunFiles(DiskFiles(), resolve_by_folder=True)
    assert files.realpath(path) == os.path.realpath(path)
    assert files.is_inside(path, str(tree)) == is_inside(path, tree)


def test_a_nul_in_the_path_is_not_inside(tree: Path) -> None:
    path = f"{tree}/d/a\0b"
    files = RunFiles(DiskFiles(), resolve_by_folder=True)
    assert files.is_inside(path, str(tree)) is is_inside(path, tree) is False
