"""A tokenizer.json edited or replaced while the process runs (an editor session) is read
again: its counts are the new file's, and the process keeps one version of each file. The
files are tiny Hugging Face tokenizers built here: one token per word, or one per
character."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetlens.contract.cache import BudgetCache
from budgetlens.tokens import core
from budgetlens.tokens.core import HuggingFaceTokenizer, get_tokenizer
from tests.tokenizer_files import TEXT, save_tokenizer


def _save(path: Path, *, per_character: bool) -> None:
    save_tokenizer(path, per_character=per_character, in_place=True)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the tokenizer files read from disk, in order."""
    seen: list[str] = []
    real = core._read_hf

    def counting(path: str, version: str) -> HuggingFaceTokenizer:
        seen.append(path)
        return real(path, version)

    monkeypatch.setattr(core, "_read_hf", counting)
    return seen


def _replace(path: Path, *, per_character: bool) -> None:
    save_tokenizer(path, per_character=per_character)


def test_an_unchanged_file_is_read_once(tmp_path: Path, reads: list[str]) -> None:
    path = tmp_path / "tokenizer.json"
    _save(path, per_character=False)
    first = get_tokenizer(str(path))
    assert get_tokenizer(str(path)) is first
    assert first.count(TEXT) == 3
    assert reads == [str(path)]


def test_a_replaced_file_is_read_again_and_counts_anew(tmp_path: Path,
                                                       reads: list[str]) -> None:
    path = tmp_path / "tokenizer.json"
    _save(path, per_character=False)
    cache = BudgetCache()
    before = get_tokenizer(str(path))
    counter = cache.counter(before)
    assert counter.count(TEXT) == 3
    assert cache.counter(get_tokenizer(str(path))) is counter  # unchanged: the same counts

    _replace(path, per_character=True)
    after = get_tokenizer(str(path))
    assert after is not before
    assert after.count(TEXT) == 16
    fresh = cache.counter(after)
    assert fresh is not counter
    assert fresh.count(TEXT) == 16  # not the 3 the old counter kept for this text
    assert reads == [str(path), str(path)]
    assert [v[1] for v in core._HF_LOADED.values()].count(after) == 1
    assert before not in [v[1] for v in core._HF_LOADED.values()]  # one version kept


def test_an_edit_in_place_is_read_again(tmp_path: Path, reads: list[str]) -> None:
    path = tmp_path / "tokenizer.json"
    _save(path, per_character=False)
    assert get_tokenizer(str(path)).count(TEXT) == 3
    _save(path, per_character=True)  # the same inode, another size
    assert get_tokenizer(str(path)).count(TEXT) == 16
    assert len(reads) == 2


def test_a_removed_file_is_an_error_again(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    _save(path, per_character=False)
    get_tokenizer(str(path))
    path.unlink()
    with pytest.raises(core.TokenizerError, match="tokenizer file not found"):
        get_tokenizer(str(path))


def test_at_most_a_few_files_are_kept(tmp_path: Path) -> None:
    for i in range(core.MAX_HF_LOADED + 3):
        path = tmp_path / f"t{i}.json"
        _save(path, per_character=False)
        get_tokenizer(str(path))
    assert len(core._HF_LOADED) <= core.MAX_HF_LOADED
    assert str(tmp_path / f"t{core.MAX_HF_LOADED + 2}.json") in core._HF_LOADED


def test_counts_shared_between_processes_stay_with_their_version(tmp_path: Path) -> None:
    """``check --jobs``: a worker that counted with the old file hands its counts on; a
    worker counting with the new file does not take them (before or after its counter is
    made)."""
    path = tmp_path / "tokenizer.json"
    _save(path, per_character=False)
    old_worker = BudgetCache()
    old_worker.share_counts()
    assert old_worker.counter(get_tokenizer(str(path))).count(TEXT) == 3
    shared = old_worker.fresh_counts()
    assert shared

    _replace(path, per_character=True)
    made_first = BudgetCache()
    counter = made_first.counter(get_tokenizer(str(path)))
    made_first.learn_counts(shared)
    assert counter.count(TEXT) == 16
    learned_first = BudgetCache()
    learned_first.learn_counts(shared)
    assert learned_first.counter(get_tokenizer(str(path))).count(TEXT) == 16


def test_a_used_file_stays_loaded(tmp_path: Path, reads: list[str]) -> None:
    """The least recently used file goes first: one in use is not read again while others
    come and go."""
    kept = tmp_path / "kept.json"
    _save(kept, per_character=False)
    get_tokenizer(str(kept))
    for i in range(core.MAX_HF_LOADED * 2):
        other = tmp_path / f"t{i}.json"
        _save(other, per_character=False)
        get_tokenizer(str(other))
        get_tokenizer(str(kept))
    assert reads.count(str(kept)) == 1
