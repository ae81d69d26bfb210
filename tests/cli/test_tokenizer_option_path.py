"""``--tokenizer FILE`` names a tokenizer.json from the current folder, as every path on the
command line does. The usage check read it from there, while the check counted with the
file of that name in config.json's folder, which was the only one recorded as an input: a
recorded answer replayed exit status 0 after the file the usage check reads was removed
(``--no-cache``: bad usage, exit status 2), and a run from another folder counted with
another file than the one named (review25).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tokenizers

from budgetlens_cli import cache as result_cache
from tests.core.contract.helpers import make_workspace

from .cache_helpers import CONFIG, STEP, clean_environment, run

__all__ = ["clean_environment"]


def _tokenizer_json(path: Path, vocabulary: dict[str, int]) -> None:
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocabulary, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(path))


def test_the_file_named_is_the_one_checked_and_counted_with(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(result_cache, "RACY_NS", 0)  # the test's files count as settled
    ws = make_workspace(tmp_path / "ws", config=CONFIG,
                        prompts={"p.txt": "Be helpful and kind.\n"}, pipelines={"a.yaml": STEP})
    _tokenizer_json(ws / "tok.json", {"a": 0, "[UNK]": 1})  # in config.json's folder
    _tokenizer_json(tmp_path / "tok.json", {"a": 0, "[UNK]": 1})  # the one named
    monkeypatch.chdir(tmp_path)
    argv = ("check", "ws", "--tokenizer", "tok.json")
    first = run(capsys, *argv)
    assert first[0] == 0
    assert f"tokenizer {(tmp_path / 'tok.json').resolve()}" in first[1]
    assert len(list(Path(".budgetlens_cache").glob("*/*.answer"))) == 1

    (tmp_path / "tok.json").unlink()
    fresh = run(capsys, *argv, "--no-cache")
    assert fresh[0] == 2 and "--tokenizer" in fresh[2]
    assert run(capsys, *argv) == fresh  # not the recorded answer
