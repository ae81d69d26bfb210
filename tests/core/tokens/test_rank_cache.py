"""The per-user cache of parsed rank tables (``tokens.core._read_ranks``): the text is parsed
once, later loads read the cache (parses counted), a damaged cache falls back to parsing, and
the ranks are exactly the ones in the text (parsed here independently)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from budgetlens.tokens import core

ENCODINGS = Path(core.__file__).resolve().parent / "encodings"
META = json.loads((ENCODINGS / "encodings.json").read_text("utf-8"))["encodings"]


def _reference(name: str) -> dict[bytes, int]:
    """The ranks of the shipped text, parsed here (not by budgetlens)."""
    out = {}
    for line in (ENCODINGS / f"{name}.tiktoken").read_text("ascii").split("\n"):
        if line:
            token, rank = line.split(" ")
            out[base64.b64decode(token)] = int(rank)
    return out


@pytest.fixture
def parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The cache folder in tmp_path; each text parse is counted (its number of lines)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(core.RANK_CACHE_ENV, raising=False)
    calls: list[int] = []
    real = core._parse_ranks

    def counting(data: bytes) -> dict[bytes, int]:
        calls.append(data.count(b"\n"))
        return real(data)

    monkeypatch.setattr(core, "_parse_ranks", counting)
    return calls


def _load(name: str) -> dict[bytes, int]:
    return core._read_ranks(ENCODINGS / META[name]["file"], META[name]["sha256"])


def _cache_file(tmp_path: Path, name: str) -> Path:
    (file,) = (tmp_path / "xdg" / "budgetlens").glob(f"{name}-*.marshal")
    return file


def test_the_second_load_reads_the_cache_not_the_text(
        parses: list[int], tmp_path: Path) -> None:
    first = _load("cl100k_base")
    assert len(parses) == 1
    assert _cache_file(tmp_path, "cl100k_base").is_file()
    second = _load("cl100k_base")
    assert len(parses) == 1
    assert first == second == _reference("cl100k_base")


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "empty"])
def test_a_damaged_cache_is_parsed_again_and_rewritten(
        parses: list[int], tmp_path: Path, damage: str) -> None:
    _load("cl100k_base")
    file = _cache_file(tmp_path, "cl100k_base")
    data = file.read_bytes()
    if damage == "garbage":
        file.write_bytes(b"\x00garbage")
    elif damage == "truncated":
        file.write_bytes(data[:len(data) // 3])
    elif damage == "flipped":
        i = len(data) // 2
        file.write_bytes(data[:i] + bytes([data[i] ^ 0x40]) + data[i + 1:])
    else:
        file.write_bytes(b"")
    assert _load("cl100k_base") == _reference("cl100k_base")
    assert len(parses) == 2
    assert _load("cl100k_base") == _reference("cl100k_base")
    assert len(parses) == 2  # rewritten whole


def test_the_cache_is_keyed_by_the_text_hash_and_a_damaged_text_still_fails(
        parses: list[int], tmp_path: Path) -> None:
    _load("cl100k_base")
    assert META["cl100k_base"]["sha256"][:32] in _cache_file(tmp_path, "cl100k_base").name
    bad = tmp_path / "cl100k_base.tiktoken"
    bad.write_bytes((ENCODINGS / "cl100k_base.tiktoken").read_bytes()[:-10])
    with pytest.raises(core.TokenizerError, match="damaged"):
        core._read_ranks(bad, META["cl100k_base"]["sha256"])


def test_turned_off_or_unwritable_it_parses_and_writes_nothing(
        parses: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(core.RANK_CACHE_ENV, "0")
    _load("cl100k_base")
    _load("cl100k_base")
    assert len(parses) == 2 and not (tmp_path / "xdg").exists()
    monkeypatch.delenv(core.RANK_CACHE_ENV)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert _load("cl100k_base") == _reference("cl100k_base")
    assert len(parses) == 3


def test_counts_from_a_cached_load_equal_tiktoken_in_a_fresh_process(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop(core.RANK_CACHE_ENV, None)
    code = ("from budgetlens.tokens import core\n"
            "n = []\nreal = core._parse_ranks\n"
            "core._parse_ranks = lambda data: n.append(1) or real(data)\n"
            "a = core.get_tokenizer('cl100k_base').encode('hello world')\n"
            "b = core.get_tokenizer('o200k_base').encode('hello world')\n"
            "print(len(n), a, b)\n")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=120) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    # hand-written ids (as in test_tokens.py); two parses the first time, none the second
    assert runs[0].stdout == "2 [15339, 1917] [24912, 2375]\n"
    assert runs[1].stdout == "0 [15339, 1917] [24912, 2375]\n"


@pytest.mark.parametrize("table", [
    "str keys", "tuple keys", "float ranks", "string ranks", "no ranks", "a float among ints"])
def test_a_sealed_file_that_is_not_a_table_of_ranks_is_parsed_again(
        parses: list[int], tmp_path: Path, table: str) -> None:
    """A file sealed with this user's key (so not planted) whose marshalled table holds the
    wrong types (another version's bug, say) is not used: the text is parsed again and the
    ranks are the text's."""
    import marshal

    from budgetlens import usercache

    reference = _reference("cl100k_base")
    _load("cl100k_base")
    file = _cache_file(tmp_path, "cl100k_base")
    items = list(reference.items())
    wrong = {
        "str keys": {k.decode("latin-1"): v for k, v in items},
        "tuple keys": {tuple(k): v for k, v in items},
        "float ranks": {k: float(v) for k, v in items},
        "string ranks": {k: str(v) for k, v in items},
        "no ranks": {k: None for k, _ in items},
        "a float among ints": {**reference, items[7][0]: 7.5},
    }[table]
    assert len(wrong) == len(reference)
    key = usercache.user_key()
    assert key is not None
    file.write_bytes(usercache.sealed(key, core._RANK_PURPOSE, core._RANK_MAGIC,
                                      marshal.dumps(wrong)))
    assert core._cached_ranks(file, len(reference)) is None
    assert _load("cl100k_base") == reference
    assert len(parses) == 2
