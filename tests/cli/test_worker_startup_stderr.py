"""``workers.run_chunks`` promises to say "whether a worker wrote to its sys.stderr", and
``check -j N`` relies on it to record no answer (docs/cli.md "The answer of a command
line"). But only what a worker writes once ``serve`` has wrapped ``sys.stderr`` in
``_Watched`` is counted: whatever it writes while starting up (``check_run._worker``
building its ``_Checker`` from the spec and sharing counts before it calls ``serve``;
``warnings.warn`` there) reaches the terminal but not the flag, so the run records an
answer whose replay lacks that text. (Modules a spawned worker imports before its target
runs are imported by the parent first, where a warning they give is seen.)

Right answer: ``run_chunks`` returns True (the wrapping has to happen before any worker
code runs, e.g. in ``_Pool.start``'s process target), for fork and spawn alike. Found by a
review (review27b); each failed before."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from budgetlens.contract.cache import BudgetCache
from budgetlens_cli import cache as result_cache
from budgetlens_cli import workers
from budgetlens_cli.main import run
from tests.cli.test_check_jobs import make_big


def _loud_at_start(conn: Any, spec: Any) -> None:
    sys.stderr.write("a library: a message while the worker starts\n")
    workers.serve(conn, lambda chunk: chunk)


def _warns_at_start(conn: Any, spec: Any) -> None:
    warnings.warn("deprecated thing used while the worker starts", UserWarning, stacklevel=1)
    workers.serve(conn, lambda chunk: chunk)


@pytest.mark.parametrize(("method", "worker"), [
    ("fork", _loud_at_start), ("spawn", _loud_at_start),
    # (a forked child keeps pytest's warning recorder: the warning is never printed there)
    ("spawn", _warns_at_start)], ids=["write-fork", "write-spawn", "warn-spawn"])
def test_a_write_before_serve_is_reported(method: str, worker: Any) -> None:
    assert workers.run_chunks(worker, None, [[1], [2]], 2, lambda *_: None, method) is True


# --- the same gap through ``budgetlens check -j 2`` --------------------------------------


def test_check_records_no_answer_after_a_worker_wrote_while_starting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    """``check_run._worker`` runs ``checker.cache.share_counts()`` (and, spawned,
    ``_Checker.of_spec``) before ``serve``; a message written there is on the terminal
    (captured below on file descriptor 2) yet the run records its answer, which the next
    identical run replays without that message. Right answer: no answer recorded."""
    for name in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", result_cache.CACHE_DIR_ENV,
                 result_cache.NO_CACHE_ENV, "BUDGETLENS_TRACEBACK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(result_cache, "RACY_NS", 0)
    monkeypatch.setattr(workers, "start_method", lambda: "fork")
    make_big(tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    real = BudgetCache.share_counts
    parent = os.getpid()

    def talking(self: BudgetCache) -> None:
        if os.getpid() != parent:  # in a worker only
            print("some library: a message while the worker starts", file=sys.stderr)
        real(self)
    monkeypatch.setattr(BudgetCache, "share_counts", talking)
    code, stats = run(["check", "ws", "-j", "2"])
    assert code == 1
    assert stats is not None and stats.worker_pids
    assert "while the worker starts" in capfd.readouterr().err  # the user saw it
    answers = sorted(Path(result_cache.CACHE_DIR_NAME).glob("*/*" + result_cache.ANSWER_SUFFIX))
    assert answers == []
