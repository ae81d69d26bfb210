"""``budgetlens.files``: the memos of ``RunFiles`` and the capped read of ``DiskFiles``.

``RunFiles(resolve_by_folder=True)`` (the CLI's) answers what ``os.path.realpath`` answers,
with one ``lstat`` per file and the folder resolved once; expected values come from
``os.path.realpath`` itself, on a tree with symbolic links to files and folders, dangling
and looping links, ``..`` and missing files. ``read_capped`` reads what ``read()`` reads.
"""

from __future__ import annotations

import io
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from budgetlens.files import DiskFiles, FileTooLarge, RunFiles, read_capped


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


@pytest.mark.parametrize("size", [0, 1, 5, 99, 100, 101, 4096, 10_000])
def test_a_capped_read_reads_what_read_reads(size: int) -> None:
    data = bytes(range(256)) * (size // 256 + 1)
    data = data[:size]
    for told in (size, 0, max(0, size - 7), size + 3):  # stat's size, or one gone stale
        got = read_capped(io.BytesIO(data), told, 100)
        assert got == data[:101], (size, told)


class _Reads(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.asked: list[int] = []

    def read(self, size: int | None = -1) -> bytes:
        self.asked.append(-1 if size is None else size)
        return super().read(size)


def test_a_capped_read_asks_for_the_stat_size_not_the_cap() -> None:
    small = _Reads(b"x" * 300)
    assert read_capped(small, 300, 8 * 1024 * 1024) == b"x" * 300
    assert small.asked == [301]  # not 8 MiB + 1: no 8 MiB buffer for a 300-byte file
    grown = _Reads(b"x" * 500)
    assert read_capped(grown, 300, 8 * 1024 * 1024) == b"x" * 500  # grew since its stat
    assert grown.asked == [301, 8 * 1024 * 1024 + 1 - 301]


def test_disk_files_still_refuse_a_file_above_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"y" * 1001)
    with pytest.raises(FileTooLarge):
        DiskFiles(max_bytes=1000).read_text(path)
    assert DiskFiles(max_bytes=1001).read_text(path) == "y" * 1001


class _RawReads(io.RawIOBase):
    """An unbuffered file whose reads stop short at ``step`` bytes (a raw read may)."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.at, self.step = data, 0, step
        self.asked: list[int] = []

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        self.asked.append(size)
        got = self.data[self.at:self.at + min(size, self.step)]
        self.at += len(got)
        return got


def test_a_capped_read_reads_on_after_a_short_raw_read() -> None:
    short = _RawReads(b"x" * 300, step=120)
    assert read_capped(short, 300, 8 * 1024 * 1024) == b"x" * 300  # type: ignore[arg-type]
    assert short.asked == [301, 181, 61]  # on to the size stat gave, no read to be told EOF
    stale = _RawReads(b"x" * 300, step=1000)
    assert read_capped(stale, 400, 8 * 1024 * 1024) == b"x" * 300  # type: ignore[arg-type]
    assert stale.asked == [401, 101]  # shorter than stat said: read on until the end


def test_disk_files_read_a_file_in_one_unbuffered_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``DiskFiles`` opens a file unbuffered: no buffer of its own, and one ``read`` for a
    file as large as its ``stat`` says (a buffered reader asks twice, the second time only
    to be told the file ends; it also asks whether the file is a terminal and where it is)."""
    import builtins

    from budgetlens import files as files_module

    path = tmp_path / "p.txt"
    path.write_bytes(b"z" * 5000)
    opened: list[Any] = []
    real_open = builtins.open

    class Counting(io.FileIO):
        reads = 0

        def read(self, size: int = -1) -> bytes:
            Counting.reads += 1
            return super().read(size)

    def spy(file: Any, mode: str = "r", buffering: int = -1, *args: Any, **kw: Any) -> Any:
        handle = real_open(file, mode, buffering, *args, **kw)
        opened.append(handle)
        if isinstance(handle, io.FileIO):
            handle.close()
            return Counting(file, mode)
        return handle

    monkeypatch.setattr(files_module, "open", spy, raising=False)
    assert DiskFiles().read_bytes(path) == b"z" * 5000
    assert [type(h) for h in opened] == [io.FileIO]
    assert Counting.reads == 1
