"""``cache_store.HashingFiles``: a file the check reads is ``stat``'ed once (the fingerprint
the check takes just before it reads it is the stat the read checks and records its bytes
at) and ``fstat``'ed twice, on the open file: once opened (a file that is no longer a regular
one is refused, never read: a FIFO) and after the read; the guarantees stay: a file
written while it is read, or replaced or removed between its fingerprint and its read, never
has its bytes recorded at a fingerprint they are not the bytes of. Mechanisms: system calls
are counted, files are changed at set points of a read."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from budgetlens import files as files_module
from budgetlens.contract.cache import RecordingFiles
from budgetlens.files import FileMissing, RunFiles, stat_fingerprint
from budgetlens_cli import cache_store
from budgetlens_cli.cache_store import UNCACHEABLE, ContentHashes, HashingFiles


def _stat_fp(path: str) -> str:
    return files_module.DiskFiles().fingerprint(Path(path))


@pytest.fixture
def prompt(tmp_path: Path) -> Path:
    path = tmp_path / "p.txt"
    path.write_text("the first text\n", "utf-8")
    return path


def _source() -> tuple[ContentHashes, RecordingFiles]:
    """The check's sources in a CLI run with the result cache on."""
    hashes = ContentHashes(_stat_fp)
    return hashes, RecordingFiles(RunFiles(HashingFiles(hashes), resolve_by_folder=True))


@pytest.fixture
def syscalls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Counter[str]]:
    """``os.stat`` (by path) and ``os.fstat`` (of a file) calls."""
    calls: Counter[str] = Counter()
    real_stat, fstat = os.stat, os.fstat

    def counting_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        calls[f"stat {os.path.basename(str(path))}"] += 1
        return real_stat(path, *args, **kwargs)

    def counting_fstat(fd: int) -> os.stat_result:
        st = fstat(fd)
        if st.st_ino in {entry.inode() for entry in os.scandir(tmp_path)}:
            calls["fstat"] += 1  # a file of the test's (not the test run's own)
        return st

    monkeypatch.setattr(os, "stat", counting_stat)
    monkeypatch.setattr(os, "fstat", counting_fstat)
    yield calls


def test_a_read_stats_its_file_once_and_records_its_bytes_at_that_stat(
        prompt: Path, syscalls: Counter[str]) -> None:
    hashes, source = _source()
    assert source.read_text(prompt) == "the first text\n"
    assert syscalls == Counter({"stat p.txt": 1, "fstat": 2}), syscalls
    seen = source.seen[str(prompt)]
    assert seen == _stat_fp(str(prompt))
    known = hashes.known(str(prompt))
    assert known is not None and known[0] == seen and known[1].startswith("b2:")
    syscalls.clear()
    assert hashes.at(str(prompt), seen) == known[1]  # no second read to key the entry
    assert syscalls == Counter()


def test_a_second_read_of_a_path_stats_it_afresh(prompt: Path, syscalls: Counter[str]) -> None:
    disk = HashingFiles(ContentHashes(_stat_fp))
    disk.fingerprint(prompt)
    disk.read_text(prompt)
    disk.read_text(prompt)  # its fingerprint's stat was used by the first read
    assert syscalls == Counter({"stat p.txt": 2, "fstat": 4}), syscalls


def test_a_stat_of_another_path_is_not_taken_for_this_one(
        prompt: Path, tmp_path: Path, syscalls: Counter[str]) -> None:
    other = tmp_path / "other.txt"
    other.write_text("another text, longer than the first\n", "utf-8")
    hashes = ContentHashes(_stat_fp)
    disk = HashingFiles(hashes)
    disk.fingerprint(other)
    assert disk.read_text(prompt) == "the first text\n"
    assert syscalls == Counter({"stat other.txt": 1, "stat p.txt": 1, "fstat": 2})
    known = hashes.known(str(prompt))
    assert known is not None and known[0] == _stat_fp(str(prompt))


def test_a_file_written_while_it_is_read_is_not_recorded(
        prompt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = files_module.read_capped

    def written_meanwhile(fh: BinaryIO, size: int, cap: int) -> bytes:
        data = real(fh, size, cap)
        with open(prompt, "a", encoding="utf-8") as out:
            out.write("appended while read\n")
        return data

    monkeypatch.setattr(files_module, "read_capped", written_meanwhile)
    hashes, source = _source()
    assert source.read_text(prompt) == "the first text\n"
    assert hashes.known(str(prompt)) is None
    monkeypatch.undo()
    assert hashes.at(str(prompt), source.seen[str(prompt)]) == UNCACHEABLE


@pytest.mark.parametrize("how", ["rewritten", "replaced"])
def test_a_file_changed_between_its_fingerprint_and_its_read_is_not_recorded(
        prompt: Path, tmp_path: Path, how: str) -> None:
    hashes, source = _source()
    seen = source.fingerprint(str(prompt))
    if how == "rewritten":  # the same file, written to (size and times change)
        prompt.write_text("a second, longer text\n", "utf-8")
    else:  # another file renamed over it (another inode)
        new = tmp_path / "new.txt"
        new.write_text("a second, longer text\n", "utf-8")
        os.replace(new, prompt)
    assert source.read_text(prompt) == "a second, longer text\n"
    assert hashes.known(str(prompt)) is None
    assert hashes.at(str(prompt), seen) == UNCACHEABLE
    assert cache_store.entry_fingerprints({str(prompt): seen}, hashes) is None


def test_a_file_removed_between_its_fingerprint_and_its_read_is_missing(
        prompt: Path) -> None:
    hashes, source = _source()
    source.fingerprint(str(prompt))
    prompt.unlink()
    with pytest.raises(FileMissing):
        source.read_text(prompt)
    assert hashes.known(str(prompt)) is None


def test_a_folder_put_where_a_file_was_is_not_read(prompt: Path) -> None:
    """Found at its open (a fresh ``stat`` then tells what is there)."""
    hashes, source = _source()
    source.fingerprint(str(prompt))
    prompt.unlink()
    prompt.mkdir()
    with pytest.raises(files_module.NotAFile):
        source.read_text(prompt)
    assert hashes.known(str(prompt)) is None


def test_the_recorded_stat_is_the_fingerprints(prompt: Path) -> None:
    hashes = ContentHashes(_stat_fp)
    disk = HashingFiles(hashes)
    fp = disk.fingerprint(prompt)
    assert fp == stat_fingerprint(os.stat(prompt))
    disk.read_bytes(prompt)
    known = hashes.known(str(prompt))
    assert known is not None and known[0] == fp
