"""Any change to a cache file's bytes (a flip, a cut, an insertion), with the file's checksum
made again as an attacker can (every checksum but a seal with the user's key), leaves the
verdict as a run without the cache has it, and writes nothing outside the cache folders
(issue 30, "What must hold" 2). The result cache and the answer of a command line are
mutated under a real ``check``; the per-user count and rank files under their readers."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from budgetlens.tokens import core, counts
from budgetlens_cli import cache as result_cache
from budgetlens_cli.main import main
from tests.cli.test_cache_forgery import CONFIG, PIPELINE, PROMPT, snapshot
from tests.core.contract.helpers import make_workspace

#: A number the output prints (the step's fixed tokens: 1,500 + 32 of format overhead), in
#: the text of an answer and in the cache file's pieces: a flip there changes the output.
PRINTED = b"1532"


def _mutate(data: bytes, op: str, where: float, insert: bytes, rechecksum: bool) -> bytes:
    """``data`` flipped, cut or added to at ``where`` (a fraction of its length; -1: the
    first digit of :data:`PRINTED`; -2: a count file's last count), then its checksum line
    made again for the new payload (``rechecksum``): a file is a magic line, a key line, a
    line of hex, then the payload."""
    if where == -2.0:  # the low byte of the last int marshal wrote (before the dict's end)
        at = len(data) - 5
    else:
        at = data.find(PRINTED) if where < 0 else int(where * len(data))
    at = min(max(at, 0), max(len(data) - 1, 0))
    if op == "flip" and data:
        data = data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]
    elif op == "cut":
        data = data[:at]
    else:
        data = data[:at] + insert + data[at:]
    if rechecksum:
        head, sep, rest = data.partition(b"\n")  # the magic line
        key, sep2, rest = rest.partition(b"\n")  # the run key
        check, sep3, payload = rest.partition(b"\n")
        if sep and sep2 and sep3 and check and all(c in b"0123456789abcdef" for c in check):
            fresh = hashlib.blake2b(payload, digest_size=max(len(check) // 2, 1)).hexdigest()
            data = head + sep + key + sep2 + fresh.encode() + sep3 + payload
    return data


MUTATIONS = dict(op=st.sampled_from(["flip", "cut", "insert"]),
                 where=st.one_of(st.just(-1.0), st.floats(0, 1)),
                 insert=st.binary(min_size=1, max_size=8), rechecksum=st.booleans())


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", result_cache.CACHE_DIR_ENV,
                 result_cache.NO_CACHE_ENV, core.RANK_CACHE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(result_cache, "RACY_NS", 0)  # the files just written count as settled
    make_workspace(tmp_path / "work" / "ws", config=CONFIG, prompts={"sys.txt": PROMPT},
                   pipelines={"p.yaml": PIPELINE})
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "precious.txt").write_text("precious\n", "utf-8")
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["cache", "answer"]), **MUTATIONS)
@example(kind="answer", op="flip", where=-1.0, insert=b"x", rechecksum=True)
@example(kind="cache", op="flip", where=-1.0, insert=b"x", rechecksum=True)
def test_a_mutated_result_cache_or_answer_never_changes_the_verdict(
        site: Path, capsys: pytest.CaptureFixture[str], kind: str, op: str, where: float,
        insert: bytes, rechecksum: bool) -> None:
    reference = _run(capsys, "check", "ws", "--no-cache")
    assert reference[0] == 1 and PRINTED.decode() in reference[1]
    cache = Path(".budgetlens_cache")
    if not list(cache.glob("*/*.answer")):  # the first example: a cache file and an answer
        _run(capsys, "check", "ws")
        assert _run(capsys, "check", "ws") == reference
    (file,) = cache.glob(f"*/*.{kind}")
    whole = file.read_bytes()
    before = snapshot(site, (site / "work" / ".budgetlens_cache", site / "xdg"))
    try:
        file.write_bytes(_mutate(whole, op, where, insert, rechecksum))
        got = _run(capsys, "check", "ws")
        assert got[:2] == reference[:2], got[2]
        assert snapshot(site, (site / "work" / ".budgetlens_cache", site / "xdg")) == before
    finally:
        for other in cache.glob("*/*.*"):  # back to the whole files for the next example
            if other.suffix in (".cache", ".answer") and other != file:
                other.unlink()
        file.write_bytes(whole)
        _run(capsys, "check", "ws")
        _run(capsys, "check", "ws")


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**MUTATIONS)
@example(op="flip", where=-2.0, insert=b"x", rechecksum=True)
def test_a_mutated_count_file_gives_no_count(
        site: Path, op: str, where: float, insert: bytes, rechecksum: bool) -> None:
    store = counts.CountStore("t", "ab" * 32)
    key = counts.text_digest("hello world")
    store.put(key, 2)
    assert store.flush()
    file = store.file()
    assert file is not None
    whole = file.read_bytes()
    try:
        mutated = _mutate(whole, op, where, insert, rechecksum)
        file.write_bytes(mutated)
        fresh = counts.CountStore("t", "ab" * 32)
        assert fresh.get(key) in (None, 2) if mutated == whole else fresh.get(key) is None
    finally:
        file.write_bytes(whole)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**MUTATIONS)
def test_a_mutated_rank_file_is_parsed_again(
        site: Path, op: str, where: float, insert: bytes, rechecksum: bool) -> None:
    meta = json.loads((core._DATA / "encodings.json").read_text("utf-8"))["encodings"]
    name = "cl100k_base"
    path = core._DATA / meta[name]["file"]
    ranks = core._read_ranks(path, meta[name]["sha256"])
    file = core._rank_cache_file(name, meta[name]["sha256"])
    assert file is not None and file.is_file()
    whole = file.read_bytes()
    count = len(ranks)
    try:
        mutated = _mutate(whole, op, where, insert, rechecksum)
        file.write_bytes(mutated)
        got = core._cached_ranks(file, count)
        assert got is None or (mutated == whole and got == ranks)
    finally:
        file.write_bytes(whole)
    assert os.path.isfile(file)
