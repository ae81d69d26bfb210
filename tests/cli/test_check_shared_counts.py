"""``budgetlens check --jobs N``: the worker processes pass their token counts on.

Pipelines far apart in the list often share a prompt (or a template); they land in chunks of
different workers, and each worker would encode the text again. The parent hands every
worker, with its next chunk, the counts the other processes made so far
(``TokenCounter.take_fresh``/``learn``, ``BudgetCache.fresh_counts``/``learn_counts``,
``workers.run_chunks(outgoing=...)``). Mechanisms, never wall-clock: calls of the tokenizer
are counted, with the workers simulated in this process in a fixed order (so the count is
exact), and the output is compared with ``-j 1``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from budgetlens.contract.cache import BudgetCache
from budgetlens.files import content_hash
from budgetlens.tokens import core
from budgetlens.tokens.core import TokenCounter
from budgetlens_cli import check_run, workers
from budgetlens_cli.main import main, run
from tests.core.contract.helpers import make_workspace

PIPELINES = 96  # above check_run.MIN_PARALLEL
PERIOD = 40  # pipeline i uses prompt i % PERIOD: five chunks of 8 apart, another worker's


class _Words:
    """A tokenizer that counts words and its own calls."""

    def __init__(self, name: str = "words") -> None:
        self.name = name
        self.calls: Counter[str] = Counter()

    def encode(self, text: str) -> list[int]:
        return [len(w) for w in text.split()]

    def count(self, text: str) -> int:
        self.calls[text] += 1
        return len(text.split())


def test_a_counter_learns_counts_and_hands_on_only_its_own() -> None:
    words = _Words()
    counter = TokenCounter(words)
    counter.learn([(content_hash("one two three"), 3)])
    assert counter.count("one two three") == 3
    assert words.calls == Counter()  # learned: never asked of the tokenizer
    assert counter.take_fresh() == []  # nothing kept before keep_fresh
    counter.keep_fresh()
    assert counter.count("four five") == 2
    assert counter.count("four five") == 2
    assert counter.count("one two three") == 3
    assert counter.take_fresh() == [(content_hash("four five"), 2)]  # made here, once
    assert counter.take_fresh() == []
    assert words.calls == Counter({"four five": 1})


def test_budget_caches_pass_counts_to_one_another() -> None:
    made, learner = _Words("w"), _Words("w")
    first, second = BudgetCache(), BudgetCache()
    first.share_counts()
    assert first.counter(made).count("a b c") == 3
    fresh = first.fresh_counts()
    assert fresh == {"w": [(content_hash("a b c"), 3)]}
    assert first.fresh_counts() == {}
    second.learn_counts(fresh)  # before its counter for "w" is made: kept until then
    assert second.counter(learner).count("a b c") == 3
    assert learner.calls == Counter()
    second.clear()
    assert second.counter(learner).count("a b c") == 3  # cleared: counted again
    assert learner.calls == Counter({"a b c": 1})


def test_each_worker_is_sent_the_counts_of_the_others_it_has_not_had(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``workers.run_chunks`` with ``outgoing``: what reaches a worker is ``outgoing(pid,
    chunk)``, made when the chunk is handed out."""
    seen: list[tuple[int, Any]] = []

    def outgoing(pid: int, chunk: Any) -> Any:
        seen.append((pid, chunk))
        return ("sent", chunk)

    got: dict[int, Any] = {}
    workers.run_chunks(_echo_worker, None, [1, 2, 3, 4, 5], 2,
                       lambda index, pid, payload: got.__setitem__(index, payload),
                       "fork", outgoing)
    assert got == {i: ("sent", i + 1) for i in range(5)}
    assert sorted(chunk for _, chunk in seen) == [1, 2, 3, 4, 5]
    assert len({pid for pid, _ in seen}) == 2


def _echo_worker(conn: Any, spec: Any) -> None:
    workers.serve(conn, lambda message: message)


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", "BUDGETLENS_CACHE_DIR",
                 "BUDGETLENS_NO_CACHE"):
        monkeypatch.delenv(name, raising=False)
    make_workspace(tmp_path / "ws",
                   config={"model_context_window": 8192, "model_max_tokens": 512},
                   prompts={f"p{i}.txt": f"Prompt {i} says: answer with care. " * (3 + i)
                            for i in range(PERIOD)},
                   pipelines={f"f{i:03d}.yaml": (
                       "settings:\n  max_context_tokens: 1000\nsteps:\n"
                       f"  - {{id: s, type: call_model, prompt_key: p{i % PERIOD},"
                       f" max_output_tokens: {100 + i}, user_parts: {{template: 'Q: {{q}}'}}}}\n")
                       for i in range(PIPELINES)})
    monkeypatch.chdir(tmp_path)
    yield Path("ws")


def _count_encodes(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()
    count = core.TiktokenTokenizer.count

    def counting(self: core.TiktokenTokenizer, text: str) -> int:
        calls[text] += 1
        return count(self, text)

    monkeypatch.setattr(core.TiktokenTokenizer, "count", counting)
    return calls


def _in_order(worker: Callable[..., None], spec: check_run.CheckSpec, chunks: Sequence[Any],
              jobs: int, handle: Callable[[int, int, Any], None], method: str | None = None,
              outgoing: Callable[[int, Any], Any] | None = None) -> None:
    """``workers.run_chunks`` in this process: two workers (as spawned: their own caches)
    taking the chunks in turn, each reply handled before the next chunk is handed out."""
    checkers: dict[int, check_run._Checker] = {}
    for index, chunk in enumerate(chunks):
        pid = 101 + index % 2
        if pid not in checkers:
            checkers[pid] = check_run._Checker.of_spec(spec)
            checkers[pid].cache.share_counts()
        assert outgoing is not None
        handle(index, pid, checkers[pid].check_shared(outgoing(pid, chunk)))


def test_a_text_counted_by_one_worker_is_not_encoded_by_another(
        shared: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_encodes(monkeypatch)
    assert main(["check", "ws", "-j", "1", "--no-cache"]) == 0
    one = capsys.readouterr()
    alone = sum(calls.values())
    assert alone == len(calls) == PERIOD + 1  # each prompt and the one template, once
    calls.clear()

    monkeypatch.setattr(workers, "run_chunks", _in_order)
    code, stats = run(["check", "ws", "-j", "2", "--no-cache"])
    assert code == 0
    assert stats is not None
    assert stats.worker_pids == frozenset({101, 102})
    assert capsys.readouterr() == one
    # each text once in all: the first pipeline's prompt and the template by this process
    # (before the workers), every other prompt by the worker that met it first; the other
    # worker learned them (without the counts passed on, the template alone is encoded
    # three times and the prompts of pipelines i and i + 40 twice)
    assert sum(calls.values()) == len(calls) == PERIOD + 1, calls
