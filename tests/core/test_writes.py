"""``budgetlens.writes.write_plan`` directly: all files or none, inside the root, BOMs kept.

(``clamp --write`` on the command line, with failure injection: tests/cli/test_safe_writes.py.)
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from budgetlens.writes import PlannedWrite, WriteFailed, WriteRefused, sha256, write_plan
from tests.core.writes_helpers import PIPELINE, snapshot, write_workspace


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    return write_workspace(tmp_path / "ws")


# ---------------------------------------------------------------- the core module directly
def _plan(ws: Path, names: list[str], change: Callable[[str], str] = lambda t: t + "# new\n",
          ) -> dict[str, PlannedWrite]:
    out = {}
    for name in names:
        data = (ws / name).read_bytes()
        text = data.decode("utf-8-sig")
        out[str(ws / name)] = PlannedWrite(data, change(text))
    return out


def test_write_plan_writes_every_file_keeping_the_bom(ws: Path) -> None:
    before = snapshot(ws)
    plan = _plan(ws, ["pipelines/a.yaml", "pipelines/b.yaml"])
    assert write_plan(plan, ws) == sorted(plan)
    assert (ws / "pipelines" / "a.yaml").read_bytes() == before["pipelines/a.yaml"] + b"# new\n"
    assert (ws / "pipelines" / "b.yaml").read_bytes() == before["pipelines/b.yaml"] + b"# new\n"
    assert set(snapshot(ws)) == set(before)   # no temporary file left
    assert write_plan(_plan(ws, ["pipelines/a.yaml"], lambda t: t), ws) == []  # no change


def test_write_plan_refuses_a_change_made_at_the_last_moment(ws: Path) -> None:
    before = snapshot(ws)
    plan = _plan(ws, ["pipelines/a.yaml", "pipelines/b.yaml"])
    a = ws / "pipelines" / "a.yaml"
    with pytest.raises(WriteRefused) as info:
        write_plan(plan, ws, before_replace=lambda: a.write_bytes(b"saved meanwhile\n"))
    assert str(info.value) == (f"{a}: changed on disk since the plan read it; nothing was"
                               " written (run the command again)")
    assert a.read_bytes() == b"saved meanwhile\n"
    before["pipelines/a.yaml"] = b"saved meanwhile\n"
    assert snapshot(ws) == before


def test_write_plan_refuses_a_path_outside_the_root(tmp_path: Path, ws: Path) -> None:
    plan = _plan(tmp_path, ["ws/pipelines/a.yaml"])
    with pytest.raises(WriteRefused) as info:
        write_plan(plan, ws / "pipelines" / "sub")
    assert str(info.value).endswith(f"is outside the workspace root {ws}/pipelines/sub")


def test_write_plan_refuses_hard_links_and_other_file_kinds(ws: Path) -> None:
    a = ws / "pipelines" / "a.yaml"
    os.link(a, ws / "pipelines" / "hard.yaml")
    with pytest.raises(WriteRefused, match="has 2 hard links"):
        write_plan(_plan(ws, ["pipelines/a.yaml"]), ws)
    fifo = ws / "pipelines" / "f.yaml"
    os.mkfifo(fifo)
    with pytest.raises(WriteRefused, match="not a regular file"):
        write_plan({str(fifo): PlannedWrite(b"", "x")}, ws)
    with pytest.raises(WriteRefused, match="no longer exists"):
        write_plan({str(ws / "gone.yaml"): PlannedWrite(b"", "x")}, ws)


def test_write_plan_writes_two_names_of_one_file_once_when_they_agree(ws: Path) -> None:
    a = ws / "pipelines" / "a.yaml"
    (ws / "pipelines" / "same.yaml").symlink_to("a.yaml")
    plan = _plan(ws, ["pipelines/a.yaml", "pipelines/same.yaml"])
    assert write_plan(plan, ws) == sorted(plan)
    assert a.read_bytes() == PIPELINE.encode() + b"# new\n"
    assert (ws / "pipelines" / "same.yaml").is_symlink()
    other = _plan(ws, ["pipelines/a.yaml", "pipelines/same.yaml"])
    other[str(ws / "pipelines" / "same.yaml")] = PlannedWrite(a.read_bytes(), "different\n")
    with pytest.raises(WriteRefused, match="the plan gives the two names different texts"):
        write_plan(other, ws)


def test_write_failed_says_whether_everything_was_restored(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan(ws, ["pipelines/a.yaml", "pipelines/b.yaml"])
    digests = {n: sha256(p.original) for n, p in plan.items()}
    real_replace = os.replace
    count = [0]

    def second_fails(src: Any, dst: Any) -> None:
        count[0] += 1
        if count[0] == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", second_fails)
    with pytest.raises(WriteFailed) as info:
        write_plan(plan, ws)
    assert info.value.restored is True
    assert {n: sha256(Path(n).read_bytes()) for n in plan} == digests


def test_an_interrupt_between_two_replaces_is_rolled_back_and_re_raised(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(ws)
    plan = _plan(ws, ["pipelines/a.yaml", "pipelines/b.yaml"])
    real_replace = os.replace
    count = [0]

    def interrupted(src: Any, dst: Any) -> None:
        count[0] += 1
        if count[0] == 2:
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_plan(plan, ws)
    assert count[0] == 3            # the second replace, then a.yaml put back
    assert snapshot(ws) == before  # and no temporary file left
