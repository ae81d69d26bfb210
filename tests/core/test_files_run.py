"""``budgetlens.files``: the memos of ``RunFiles`` and the capped read of ``DiskFiles``.

``RunFiles(resolve_by_folder=True)`` (the CLI's) answers what ``os.path.realpath`` answers,
with one ``lstat`` per file and the folder resolved once; expected values come from
``os.path.realpath`` itself, on a tree with symbolic links to files and folders, dangling
and looping links, ``..`` and missing files.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from budgetlens.files import DiskFiles, FileTooLarge, RunFiles


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "real" / "prompts").mkdir(parents=True)
    (tmp_path / "real" / "prompts" / "a.txt").write_text("a", "utf-8")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "b.txt").write_text("b", "utf-8")
    (tmp_path / "real" / "prompts" / "link.txt").symlink_to(tmp_path / "elsewhere" / "b.txt")
    (tmp_path / "real" / "prompts" / "rel.txt").symlink_to(Path("..") / ".." / "elsewhere"
                                                          / "b.txt")
    (tmp_path / "real" / "prompts" / "dangling.txt").symlink_to(tmp_path / "nowhere.txt")
    (tmp_path / "real" / "prompts" / "loop.txt").symlink_to(
        tmp_path / "real" / "prompts" / "loop.txt")
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "up").symlink_to(tmp_path / "elsewhere")
    return tmp_path


NAMES = ["real/prompts/a.txt", "real/prompts/link.txt", "real/prompts/rel.txt",
         "real/prompts/dangling.txt", "real/prompts/loop.txt", "real/prompts/missing.txt",
         "linked/prompts/a.txt", "linked/prompts/link.txt", "linked/../real/prompts/a.txt",
         "real/up/b.txt", "real/up/../prompts/a.txt", "real/prompts/a.txt/inside.txt",
         "real/prompts/./a.txt", "real//prompts/a.txt", "real/prompts/", "real", "a.txt",
         "real/prompts/.", "real/prompts/.."]


@pytest.mark.parametrize("absolute", [True, False])
def test_resolving_by_folder_answers_what_realpath_answers(
        tree: Path, monkeypatch: pytest.MonkeyPatch, absolute: bool) -> None:
    monkeypatch.chdir(tree)
    by_folder = RunFiles(DiskFiles(), resolve_by_folder=True)
    for name in NAMES:
        path = str(tree / name) if absolute else name
        assert by_folder.realpath(path) == os.path.realpath(path), name


def test_a_folder_is_resolved_once_for_all_its_files(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: Counter[str] = Counter()
    realpath = os.path.realpath

    def counting(path: Any, *args: Any, **kwargs: Any) -> str:
        calls[str(path)] += 1
        return realpath(path, *args, **kwargs)

    folder = tree / "real" / "prompts"
    for i in range(50):
        (folder / f"p{i}.txt").write_text("x", "utf-8")
    monkeypatch.setattr(os.path, "realpath", counting)
    files = RunFiles(DiskFiles(), resolve_by_folder=True)
    for i in range(50):
        assert files.realpath(str(folder / f"p{i}.txt")) == str(folder / f"p{i}.txt")
    assert files.realpath(str(folder / "link.txt")) == str(tree / "elsewhere" / "b.txt")
    # no file of the folder but the link resolved by realpath; the folders above each at
    # most once (the root, and any that is itself a link)
    assert calls[str(folder / "link.txt")] == 1
    assert not [k for k in calls if k.startswith(str(folder / "p"))], calls
    assert max(calls.values()) == 1 and sum(calls.values()) <= 1 + len(folder.parts), calls
    plain = RunFiles(DiskFiles())
    calls.clear()
    for i in range(50):
        plain.realpath(str(folder / f"p{i}.txt"))
    assert sum(calls.values()) == 50  # without: every file resolved from the root


def test_is_inside_takes_each_absolute_path_once(tree: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)
    calls: Counter[str] = Counter()
    abspath = os.path.abspath

    def counting(path: Any) -> str:
        calls[str(path)] += 1
        return abspath(path)

    monkeypatch.setattr(os.path, "abspath", counting)
    files = RunFiles(DiskFiles(), resolve_by_folder=True)
    for name in ("real/prompts/a.txt", "real/prompts/link.txt", "real/prompts/missing.txt"):
        files.is_inside(name, "real")
    assert files.is_inside("real/prompts/a.txt", "real")
    assert not files.is_inside("real/prompts/link.txt", "real")  # resolves outside
    assert calls["real"] == 1 and max(calls.values()) == 1, calls


def test_disk_files_still_refuse_a_file_above_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"y" * 1001)
    with pytest.raises(FileTooLarge):
        DiskFiles(max_bytes=1000).read_text(path)
    assert DiskFiles(max_bytes=1001).read_text(path) == "y" * 1001
