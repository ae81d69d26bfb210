"""A result made from a read the check could not do is never cached. When an input cannot
be read (an I/O error that leaves its stat as it was: EIO on a network file system,
EMFILE/ENFILE under descriptor pressure), the report says so (BL041, an error); the cache
used to key that result by reading the file again for its hash, and when that read worked,
every later run printed the error while ``--no-cache`` passed (review25).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from budgetlens import files as core_files
from tests.core.contract.helpers import make_workspace

from .cache_helpers import CONFIG, STEP, checked, clean_environment, run

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
