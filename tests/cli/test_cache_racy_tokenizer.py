"""A tokenizer.json, which its library reads (not the check), is hashed for the entry by a
later read of its own, so a racy stat cannot be settled by comparing bytes: a tokenizer.json
saved in place in the tick the check used it (same size, inode and times) got an entry with
the hash of the *new* bytes and the counts of the *old* ones, and the next run served them
(``--no-cache`` counts with the new file): a false all-clear (exit 0) under ``fail_fast``. A
pipeline whose tokenizer.json is racy is not cached now. The same save of a prompt is caught
(``HashingFiles`` hashes the bytes read). Found by a review (review25b), failing before.

The file system keeps every time at one whole second here (as in
``test_cache_racy_entries.py``): a save in the same second keeps the stat.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetlens.tokens import core as tokens_core
from budgetlens_cli import check_cmd
from tests.core.contract.helpers import make_workspace
from tests.tokenizer_files import TEXT, tokenizer_json

from .cache_helpers import STEP, clean_environment, frozen_times, run

__all__ = ["clean_environment", "frozen_times"]

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

    real = check_cmd.check_pipeline

    def saved_meanwhile(path: Any, **kwargs: Any) -> Any:
        report = real(path, **kwargs)  # counted with the tokenizer of one word a token
        with open(tok, "r+", encoding="utf-8") as fh:  # an editor's save, in place
            fh.write(characters)
        return report

    with monkeypatch.context() as mp:
        mp.setattr(check_cmd, "check_pipeline", saved_meanwhile)
        first = run(capsys, *argv)
    assert first[0] == 0 and _tokens(first[1]) == [3]  # 1263 tokens fit the 1270 window
    tokens_core._HF_LOADED.clear()  # each command is a process of its own

    fresh = run(capsys, *argv, "--no-cache")
    assert fresh[0] == 1 and _tokens(fresh[1]) == [16]  # 1276 do not
    cached = run(capsys, *argv)
    assert (cached[0], _tokens(cached[1])) == (1, [16])  # the cache: exit 0, 3 tokens
