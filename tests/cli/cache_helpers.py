"""What the result cache's tests share: a clean environment (no policy or cache variables
of the machine) and one ``budgetlens`` command run in process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from budgetlens_cli import cache as result_cache
from budgetlens_cli import check_cmd
from budgetlens_cli.main import main

STEP = ("settings:\n  max_context_tokens: 1000\n"
        "steps:\n  - {id: s, type: call_model, prompt_key: p, max_output_tokens: 100}\n")
CONFIG = {"model_context_window": 4096, "model_max_tokens": 512}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", result_cache.CACHE_DIR_ENV,
                 result_cache.NO_CACHE_ENV):
        monkeypatch.delenv(name, raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit status, standard output and standard error of ``budgetlens ARGV``."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the pipelines checked (not taken from the cache), in order."""
    calls: list[str] = []
    real = check_cmd.check_pipeline

    def counting(path: Path | str, **kwargs: Any) -> Any:
        calls.append(Path(path).name)
        return real(path, **kwargs)

    monkeypatch.setattr(check_cmd, "check_pipeline", counting)
    return calls
