"""What the result cache's tests share: a clean environment (no policy or cache variables
of the machine) and one ``budgetlens`` command run in process."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from budgetlens_cli import cache as result_cache
from budgetlens_cli import check_run
from budgetlens_cli.main import main

STEP = ("settings:\n  max_context_tokens: 1000\n"
        "steps:\n  - {id: s, type: call_model, prompt_key: p, max_output_tokens: 100}\n")
CONFIG = {"model_context_window": 4096, "model_max_tokens": 512}
SECOND = 1_000_000_000


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", result_cache.CACHE_DIR_ENV,
                 result_cache.NO_CACHE_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def replayed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of pipelines of each answer ``cache.replay`` printed, in order."""
    real = result_cache.replay
    found: list[int] = []

    def watched(*args: Any, **kwargs: Any) -> tuple[int, int] | None:
        got = real(*args, **kwargs)
        if got is not None:
            found.append(got[1])
        return got

    monkeypatch.setattr(result_cache, "replay", watched)
    return found


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit status, standard output and standard error of ``budgetlens ARGV``."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the pipelines checked (not taken from the cache), in order."""
    calls: list[str] = []
    real = check_run.check_pipeline

    def counting(path: Path | str, **kwargs: Any) -> Any:
        calls.append(Path(path).name)
        return real(path, **kwargs)

    monkeypatch.setattr(check_run, "check_pipeline", counting)
    return calls


@pytest.fixture
def frozen_times(monkeypatch: pytest.MonkeyPatch) -> int:
    """Every stat reports the whole second this fixture started in as every time of every
    file (what the file system shows when all saves fall in one tick); returns it (ns)."""
    frozen = time.time_ns() // SECOND * SECOND

    def freeze(st: os.stat_result) -> os.stat_result:
        s = frozen // SECOND
        return os.stat_result((*tuple(st)[:7], s, s, s, float(s), float(s), float(s),
                               frozen, frozen, frozen, st.st_blksize, st.st_blocks,
                               st.st_rdev))
    for name in ("stat", "fstat", "lstat"):
        real = getattr(os, name)

        def frozen_stat(*args: Any, _real: Any = real, **kwargs: Any) -> os.stat_result:
            return freeze(_real(*args, **kwargs))
        monkeypatch.setattr(os, name, frozen_stat)
    return frozen


#: How a run notes a cache file it ignored (one line on standard error).
IGNORED_NOTE = "budgetlens: note: ignored the cache file "


def without_note(got: tuple[int, str, str], noted: bool = True) -> tuple[int, str, str]:
    """``got`` (exit status, output, standard error) with the one note about a cache file
    it ignored taken out of its standard error (asserted there when ``noted``)."""
    code, out, err = got
    lines = err.splitlines(keepends=True)
    notes = [line for line in lines if line.startswith(IGNORED_NOTE)]
    assert len(notes) == (1 if noted else 0), err
    return code, out, "".join(line for line in lines if line not in notes)
