"""A result made from a read the check could not do is never cached. When an input cannot
be read (an I/O error that leaves its stat as it was: EIO on a network file system,
EMFILE/ENFILE under descriptor pressure), the report says so (BL041, an error); the cache
used to key that result by reading the file again for its hash, and when that read worked,
every later run printed the error while ``--no-cache`` passed (review25).

A read the check could not do keeps every result of the run that depends on the file out
of the cache, not only the first: the core keeps the failed read's error
(``BudgetCache.prompt_tokens`` memoises a ``SourceError`` per tokenizer and fingerprint), so a
later step or pipeline that counts the prompt with the same tokenizer reports "cannot read"
from the memo even after another read of the file worked (a step's own ``model``, another
pipeline's, or ``--target``). Such a result was cached under the good hash: every later run
printed the error and exited 1 while ``--no-cache`` passed. And a tokenizer.json, which its
library reads (not the check), that could not be read (BL014) keeps its pipeline out of the
cache. Found by a review (review25b); each test failed before the fix.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from budgetlens import files as core_files
from budgetlens_cli import cache as result_cache
from tests.cli.cache_helpers import CONFIG, STEP, checked, clean_environment, run
from tests.core.contract.helpers import make_workspace

__all__ = ["checked", "clean_environment"]


def test_a_prompt_the_check_could_not_read_is_read_again_by_the_next_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        checked: list[str]) -> None:
    make_workspace(tmp_path / "ws", config=CONFIG, prompts={"p.txt": "Be helpful.\n"},
                   pipelines={"a.yaml": STEP, "b.yaml": STEP.replace("100}", "120}")})
    monkeypatch.chdir(tmp_path)
    real_opener = core_files._open_nonblocking

    def failing(path: str, flags: int) -> int:
        if str(path).endswith("p.txt"):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))
        return real_opener(path, flags)

    with monkeypatch.context() as mp:  # the first run's reads of the prompt fail
        mp.setattr(core_files, "_open_nonblocking", failing)
        first = run(capsys, "check", "ws")
    assert first[0] == 1 and "BL041" in first[1] and "cannot read" in first[1]

    fresh = run(capsys, "check", "ws", "--no-cache")
    assert fresh[0] == 0 and "BL041" not in fresh[1]
    checked.clear()
    assert run(capsys, "check", "ws") == fresh
    assert sorted(checked) == ["a.yaml", "b.yaml"]  # neither result was kept
    checked.clear()
    assert run(capsys, "check", "ws") == fresh
    assert checked == []  # the results of good reads are


TWO_MODELS = ("settings:\n  max_context_tokens: 1000\n"
              "steps:\n  - {id: s, type: call_model, prompt_key: p, max_output_tokens: 100}\n"
              "  - {id: t, type: call_model, prompt_key: p, max_output_tokens: 100,"
              " model: gpt-4o-mini}\n")


def _first_open_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    real_opener = core_files._open_nonblocking
    failed: list[str] = []

    def failing(path: str, flags: int) -> int:
        if str(path).endswith("p.txt") and len(failed) < 2:  # the read and its retry
            failed.append(str(path))  # a passing I/O error (EIO, EMFILE)
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))
        return real_opener(path, flags)

    monkeypatch.setattr(core_files, "_open_nonblocking", failing)


@pytest.mark.parametrize("layout", ["one_pipeline", "three_pipelines", "target"])
def test_a_failed_read_memoised_by_the_core_is_not_cached_after_a_good_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        checked: list[str], layout: str) -> None:
    argv: tuple[str, ...] = ("check", "ws")
    if layout == "one_pipeline":  # step s (cl100k) fails, step t (o200k) reads it
        pipelines = {"a.yaml": TWO_MODELS}
    elif layout == "target":  # the check (cl100k) fails, the target matrix (o200k) reads it
        pipelines = {"a.yaml": STEP}
        argv += ("--target", "gpt-4o")
    else:  # a (cl100k) fails, b (o200k) reads it, c (cl100k) takes a's memoised error
        pipelines = {"a.yaml": STEP,
                     "b.yaml": STEP.replace("100}", "100, model: gpt-4o-mini}"),
                     "c.yaml": STEP.replace("100}", "120}")}
    make_workspace(tmp_path / "ws", config=CONFIG, prompts={"p.txt": "Be helpful.\n"},
                   pipelines=pipelines)
    monkeypatch.chdir(tmp_path)
    with monkeypatch.context() as mp:
        _first_open_fails(mp)
        first = run(capsys, *argv)
    assert first[0] == 1 and "cannot read" in first[1]

    fresh = run(capsys, *argv, "--no-cache")
    assert fresh[0] == 0 and "cannot read" not in fresh[1]
    assert run(capsys, *argv) == fresh  # the cache serves the failed read's error


def test_a_tokenizer_json_the_check_could_not_read_is_read_again_by_the_next_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        checked: list[str]) -> None:
    """A tokenizer.json whose read fails (EIO, EMFILE) is BL014 ("cannot read tokenizer
    file", an error, counted with cl100k_base): an input not read, so the pipeline is not
    cached (before, the cache hashed the file afterwards and kept the error). A broken
    file (no tokenizer in it) is BL014 as well, and cached: its bytes decide that."""
    from budgetlens.tokens import core as tokens_core
    from tests.tokenizer_files import TEXT, tokenizer_json

    monkeypatch.setattr(result_cache, "RACY_NS", 0)  # the test's files count as settled
    config = dict(CONFIG, tokenizer="tok.json")
    ws = make_workspace(tmp_path / "ws", config=config, prompts={"p.txt": TEXT},
                        pipelines={"a.yaml": STEP})
    (ws / "tok.json").write_text(tokenizer_json(per_character=False), "utf-8")
    monkeypatch.chdir(tmp_path)

    def failing(path: Any, *args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))

    with monkeypatch.context() as mp:  # the first run's read of the tokenizer fails
        mp.setattr(tokens_core, "open", failing, raising=False)
        first = run(capsys, "check", "ws")
    assert first[0] == 1 and "BL014" in first[1] and "cannot read tokenizer file" in first[1]

    fresh = run(capsys, "check", "ws", "--no-cache")
    assert fresh[0] == 0 and "BL014" not in fresh[1]
    checked.clear()
    assert run(capsys, "check", "ws") == fresh
    assert checked == ["a.yaml"]  # the failed read's result was not kept
    checked.clear()
    assert run(capsys, "check", "ws") == fresh
    assert checked == []  # this one was

    (ws / "tok.json").write_text('{"version": "1.0"}', "utf-8")  # no tokenizer in it
    tokens_core._HF_LOADED.clear()  # as a new process
    broken = run(capsys, "check", "ws", "--no-cache")
    assert broken[0] == 1 and "cannot load tokenizer file" in broken[1]
    checked.clear()
    assert run(capsys, "check", "ws") == broken
    assert run(capsys, "check", "ws") == broken
    assert checked == ["a.yaml"]  # checked once, then from the cache
