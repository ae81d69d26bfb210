"""A result cache entry keeps an input's stat as proof that it is unchanged only when the
file was older than the run that read it by more than the file system's time resolution
(``RACY_NS``; 2 s for whole-second times): a file saved again in the same clock tick after
the check read it (same size, same inode: an in-place save) keeps its times, so a stat taken
that close is marked racy and the next run compares the file's bytes (then keeps the stat it
has, once settled). The recorded answer of a command line had this guard; the entries had
none, and served the old bytes' result on every later run (review25).

The file system here keeps every time at one whole second (``frozen_times``): a save in the
same second is exactly what a file system with whole-second times, or a kernel's coarse
clock, shows.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from budgetlens_cli import cache as result_cache
from tests.core.contract.helpers import make_workspace

from .cache_helpers import CONFIG, SECOND, checked, clean_environment, frozen_times, run

__all__ = ["checked", "clean_environment", "frozen_times"]

PIPELINE = ("settings:\n  max_context_tokens: {}\n"
            "steps:\n  - {{id: s, type: call_model, prompt_key: p, max_output_tokens: 100}}\n")


def test_a_pipeline_saved_again_in_the_tick_it_was_checked_in_is_checked_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        frozen_times: int, checked: list[str]) -> None:
    ws = make_workspace(tmp_path / "ws", config=CONFIG, prompts={"p.txt": "Be helpful.\n"},
                        pipelines={"a.yaml": PIPELINE.format(1000)})
    pipeline = ws / "pipelines" / "a.yaml"
    monkeypatch.chdir(tmp_path)
    argv = ("check", "ws", "--policy", "fail_fast")
    seen = result_cache.disk_fingerprint(str(pipeline))
    assert run(capsys, *argv)[0] == 0
    pipeline.write_text(PIPELINE.format(9000), "utf-8")  # same size, same inode, same second
    assert result_cache.disk_fingerprint(str(pipeline)) == seen

    fresh = run(capsys, *argv, "--no-cache")
    assert fresh[0] == 1  # 9000 context tokens do not fit a 4096 window
    checked.clear()
    assert run(capsys, *argv) == fresh
    assert checked == ["a.yaml"]  # its bytes differ: checked again

    # once the files are older than the racy tick, their stats count again: no file is
    # hashed, and the run's answer is recorded (and replayed)
    monkeypatch.setattr(time, "time_ns", lambda: frozen_times + 3 * SECOND)
    checked.clear()
    assert run(capsys, *argv) == fresh
    assert run(capsys, *argv) == fresh
    assert checked == []
    assert result_cache.last_replayed_pipelines == 1


def test_a_racy_stat_read_again_with_the_same_bytes_is_kept_once_settled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        frozen_times: int, checked: list[str]) -> None:
    make_workspace(tmp_path / "ws", config=CONFIG, prompts={"p.txt": "Be helpful.\n"},
                   pipelines={"a.yaml": PIPELINE.format(1000)})
    monkeypatch.chdir(tmp_path)
    first = run(capsys, "check", "ws")
    hashed: list[str] = []
    real = result_cache.ContentHashes.content

    def content(self: Any, path: str, *, fresh: bool = False) -> tuple[str, str]:
        hashed.append(path)
        return real(self, path, fresh=fresh)
    monkeypatch.setattr(result_cache.ContentHashes, "content", content)
    checked.clear()
    assert run(capsys, "check", "ws") == first  # racy: compared by bytes, still racy
    assert checked == [] and any(p.endswith("a.yaml") for p in hashed)
    monkeypatch.setattr(time, "time_ns", lambda: frozen_times + 3 * SECOND)
    hashed.clear()
    assert run(capsys, "check", "ws") == first  # settled now: compared by bytes, kept
    assert checked == [] and any(p.endswith("a.yaml") for p in hashed)
    hashed.clear()
    assert run(capsys, "check", "ws") == first  # by stat (or the answer): nothing hashed
    assert checked == [] and hashed == []
