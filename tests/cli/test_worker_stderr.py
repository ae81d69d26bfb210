"""A worker of ``budgetlens check -j N`` that writes to its standard error (a library's
message, a warning printed): the run records no answer (``cache.record_answer``), as a run
in one process with anything on standard error records none, so the next run does not
replay output without that message. Before, the parent watched only its own ``sys.stderr``
and recorded the answer. Writes below Python's ``sys.stderr`` (a C library's to file
descriptor 2) are not seen (docs/cli.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from budgetlens_cli import cache as result_cache
from budgetlens_cli import check_run, workers
from budgetlens_cli.main import run
from tests.cli.test_check_jobs import make_big


@pytest.fixture(autouse=True)
def _settled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", result_cache.CACHE_DIR_ENV,
                 result_cache.NO_CACHE_ENV, "BUDGETLENS_TRACEBACK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(result_cache, "RACY_NS", 0)  # files just written count as settled
    monkeypatch.setattr(workers, "start_method", lambda: "fork")  # the patch below goes along
    make_big(tmp_path / "ws")
    monkeypatch.chdir(tmp_path)


def _answers() -> list[Path]:
    return sorted(Path(result_cache.CACHE_DIR_NAME).glob("*/*" + result_cache.ANSWER_SUFFIX))


def _talking(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """``check_pipeline`` of pipeline ``name`` prints a line on standard error."""
    real = check_run.check_pipeline

    def talking(path: Path | str, **kwargs: Any) -> Any:
        if Path(path).name == name:
            print("some library: a message", file=sys.stderr)
        return real(path, **kwargs)
    monkeypatch.setattr(check_run, "check_pipeline", talking)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_that_wrote_to_standard_error_records_no_answer(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], jobs: str) -> None:
    _talking(monkeypatch, "f070.yaml")  # checked in a worker with -j 2 (the first is here)
    code, stats = run(["check", "ws", "-j", jobs])
    assert code == 1
    assert stats is not None
    assert bool(stats.worker_pids) == (jobs == "2")
    capsys.readouterr()
    assert _answers() == []


def test_a_quiet_run_in_workers_records_its_answer(capsys: pytest.CaptureFixture[str]) -> None:
    """The control: the same run, nothing on standard error, records one."""
    code, stats = run(["check", "ws", "-j", "2"])
    assert code == 1
    assert stats is not None and stats.worker_pids
    capsys.readouterr()
    assert len(_answers()) == 1


def test_run_chunks_tells_whether_a_worker_wrote_to_standard_error() -> None:
    assert workers.run_chunks(_quiet, None, [[1], [2]], 2, lambda *_: None) is False
    assert workers.run_chunks(_loud, None, [[1], [2]], 2, lambda *_: None) is True


def _quiet(conn: Any, spec: Any) -> None:
    workers.serve(conn, lambda chunk: chunk)


def _loud(conn: Any, spec: Any) -> None:
    def work(chunk: list[int]) -> list[int]:
        if chunk == [2]:
            sys.stderr.write("loud\n")
        return chunk
    workers.serve(conn, work)
