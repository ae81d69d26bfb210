"""A result cache entry keeps an input's stat as proof that it is unchanged only when the
file was older than the run that read it by more than the file system's time resolution
(``RACY_NS``; 2 s for whole-second times): a file saved again in the same clock tick after
the check read it (same size, same inode: an in-place save) keeps its times, so a stat taken
that close is marked racy and the next run compares the file's bytes (then keeps the stat it
has, once settled). The recorded answer of a command line had this guard; the entries had
none, and served the old bytes' result on every later run (review25).

The file system here keeps every time at one whole second (``frozen_times``): a save in the
same second is exactly what a file system with whole-second times, or a kernel's coarse
clock, shows.

A tokenizer.json, which its library reads (not the check), is hashed for the entry by a
later read of its own, so a racy stat cannot be settled by comparing bytes: a tokenizer.json
saved in place in the tick the check used it (same size, inode and times) got an entry with
the hash of the *new* bytes and the counts of the *old* ones, and the next run served them
(``--no-cache`` counts with the new file): a false all-clear (exit 0) under ``fail_fast``. A
pipeline whose tokenizer.json is racy is not cached now. The same save of a prompt is caught
(``HashingFiles`` hashes the bytes read). Found by a review (review25b), failing before.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from budgetlens.tokens import core as tokens_core
from budgetlens_cli import cache as result_cache
from budgetlens_cli import check_run
from tests.cli.cache_helpers import (
    CONFIG,
    SECOND,
    STEP,
    checked,
    clean_environment,
    frozen_times,
    replayed,
    run,
)
from tests.core.contract.helpers import make_workspace
from tests.tokenizer_files import TEXT, tokenizer_json

__all__ = ["checked", "clean_environment", "frozen_times", "replayed"]


PIPELINE = ("settings:\n  max_context_tokens: {}\n"
            "steps:\n  - {{id: s, type: call_model, prompt_key: p, max_output_tokens: 100}}\n")


def test_a_pipeline_saved_again_in_the_tick_it_was_checked_in_is_checked_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        frozen_times: int, checked: list[str], replayed: list[int]) -> None:
    ws = make_workspace(tmp_path / "ws", config=CONFIG, prompts={"p.txt": "Be helpful.\n"},
                        pipelines={"a.yaml": PIPELINE.format(1000)})
    pipeline = ws / "pipelines" / "a.yaml"
    monkeypatch.chdir(tmp_path)
    argv = ("check", "ws", "--policy", "fail_fast")
    seen = result_cache.disk_fingerprint(str(pipeline))
    assert run(capsys, *argv)[0] == 0
    pipeline.write_text(PIPELINE.format(9000), "utf-8")  # same size, same inode, same second
    assert result_cache.disk_fingerprint(str(pipeline)) == seen

    fresh = run(capsys, *argv, "--no-cache")
    assert fresh[0] == 1  # 9000 context tokens do not fit a 4096 window
    checked.clear()
    assert run(capsys, *argv) == fresh
    assert checked == ["a.yaml"]  # its bytes differ: checked again

    # once the files are older than the racy tick, their stats count again: no file is
    # hashed, and the run's answer is recorded (and replayed)
    monkeypatch.setattr(time, "time_ns", lambda: frozen_times + 3 * SECOND)
    checked.clear()
    assert run(capsys, *argv) == fresh
    assert run(capsys, *argv) == fresh
    assert checked == []
    assert replayed[-1] == 1


def test_a_racy_stat_read_again_with_the_same_bytes_is_kept_once_settled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        frozen_times: int, checked: list[str]) -> None:
    make_workspace(tmp_path / "ws", config=CONFIG, prompts={"p.txt": "Be helpful.\n"},
                   pipelines={"a.yaml": PIPELINE.format(1000)})
    monkeypatch.chdir(tmp_path)
    first = run(capsys, "check", "ws")
    hashed: list[str] = []
    real = result_cache.ContentHashes.content

    def content(self: Any, path: str, *, fresh: bool = False) -> tuple[str, str]:
        hashed.append(path)
        return real(self, path, fresh=fresh)
    monkeypatch.setattr(result_cache.ContentHashes, "content", content)
    checked.clear()
    assert run(capsys, "check", "ws") == first  # racy: compared by bytes, still racy
    assert checked == [] and any(p.endswith("a.yaml") for p in hashed)
    monkeypatch.setattr(time, "time_ns", lambda: frozen_times + 3 * SECOND)
    hashed.clear()
    assert run(capsys, "check", "ws") == first  # settled now: compared by bytes, kept
    assert checked == [] and any(p.endswith("a.yaml") for p in hashed)
    hashed.clear()
    assert run(capsys, "check", "ws") == first  # by stat (or the answer): nothing hashed
    assert checked == [] and hashed == []


def _tokens(output: str) -> list[str]:
    return [s["budget"]["system_prompt"] for s in json.loads(output)["steps"]]


def test_a_tokenizer_saved_in_the_tick_it_was_used_in_is_counted_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        frozen_times: int) -> None:
    words, characters = (tokenizer_json(per_character=c) for c in (False, True))
    size = max(len(words), len(characters)) + 1
    words, characters = (t[:-1] + " " * (size - len(t)) + t[-1] for t in (words, characters))
    config = {"model_context_window": 1270, "model_max_tokens": 512, "tokenizer": "tok.json"}
    ws = make_workspace(tmp_path / "ws", config=config, prompts={"p.txt": TEXT},
                        pipelines={"a.yaml": STEP})
    tok = ws / "tok.json"
    tok.write_text(words, "utf-8")
    monkeypatch.chdir(tmp_path)
    argv = ("check", "ws", "--format", "json", "--policy", "fail_fast")

    real = check_run.check_pipeline

    def saved_meanwhile(path: Any, **kwargs: Any) -> Any:
        report = real(path, **kwargs)  # counted with the tokenizer of one word a token
        with open(tok, "r+", encoding="utf-8") as fh:  # an editor's save, in place
            fh.write(characters)
        return report

    with monkeypatch.context() as mp:
        mp.setattr(check_run, "check_pipeline", saved_meanwhile)
        first = run(capsys, *argv)
    assert first[0] == 0 and _tokens(first[1]) == [3]  # 1263 tokens fit the 1270 window
    tokens_core._HF_LOADED.clear()  # each command is a process of its own

    fresh = run(capsys, *argv, "--no-cache")
    assert fresh[0] == 1 and _tokens(fresh[1]) == [16]  # 1276 do not
    cached = run(capsys, *argv)
    assert (cached[0], _tokens(cached[1])) == (1, [16])  # the cache: exit 0, 3 tokens
