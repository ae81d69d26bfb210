"""``clamp --write`` writes a whole plan or nothing (``budgetlens.writes``; the module itself:
tests/core/test_writes.py).

Failure injection: after each failure every file is byte-identical either to its bytes before
the run or to the fully planned result (taken from a successful run on an identical copy of
the workspace), the exit status is 2 and standard error holds exactly one line.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from budgetlens_cli import clamp_cmd
from budgetlens_cli.main import main
from tests.core.contract.helpers import make_workspace
from tests.core.writes_helpers import PADDING, PIPELINE, snapshot, write_workspace


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    return write_workspace(tmp_path / "ws")


@pytest.fixture
def planned(tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, bytes]:
    """The fully planned result: ``clamp --write`` on an identical copy that nothing disturbs."""
    copy = tmp_path / "copy"
    shutil.copytree(ws, copy)
    assert main(["clamp", str(copy), "--write"]) == 0
    capsys.readouterr()
    result = snapshot(copy)
    before = snapshot(ws)
    assert set(result) == set(before)
    # both pipelines change (their numbers only); the BOM and the padding of b.yaml stay
    for name in ("pipelines/a.yaml", "pipelines/b.yaml"):
        assert result[name] != before[name]
        assert b"max_context_tokens: 1800" in before[name]
        assert b"max_context_tokens: 1800" not in result[name]
    assert result["pipelines/b.yaml"].startswith(b"\xef\xbb\xbf" + PADDING.encode())
    return result


def _each_file_before_or_planned(ws: Path, before: dict[str, bytes],
                                 planned: dict[str, bytes]) -> dict[str, str]:
    """Which state each file is in; fails on a file in neither (or a stray file)."""
    after = snapshot(ws)
    assert set(after) == set(before), "temporary files left behind or files lost"
    states: dict[str, str] = {}
    for name, data in after.items():
        if data == before[name]:
            states[name] = "before"
        elif data == planned[name]:
            states[name] = "planned"
        else:
            pytest.fail(f"{name} is neither as before nor as planned: {data!r}")
    return states


def _one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("budgetlens: error: "), err
    assert "Traceback" not in err
    return err


# ---------------------------------------------------------------- a write that fails midway
def test_file_size_limit_in_a_real_process_writes_nothing(
        ws: Path, planned: dict[str, bytes]) -> None:
    before = snapshot(ws)
    limit = len(before["pipelines/a.yaml"]) + 512   # a.yaml's files fit, b.yaml's do not
    assert len(before["pipelines/b.yaml"]) > limit

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PIPELINE_LIMITS_POLICY", None)
    env.pop("APP_DEVELOPMENT", None)
    proc = subprocess.run([sys.executable, "-m", "budgetlens_cli", "clamp", str(ws), "--write"],
                          capture_output=True, text=True, timeout=120, env=env,
                          preexec_fn=small_files)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    err = _one_line(proc.stderr)
    assert f"{ws}/pipelines/b.yaml: cannot write a temporary file next to it" in err
    assert "nothing was written" in err
    assert proc.stdout == ""
    assert set(_each_file_before_or_planned(ws, before, planned).values()) == {"before"}


def test_a_replace_failing_on_the_second_file_puts_the_first_back(
        ws: Path, planned: dict[str, bytes], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(ws)
    calls: list[tuple[str, str]] = []
    real_replace = os.replace

    def failing_second(src: Any, dst: Any) -> None:
        calls.append((str(src), str(dst)))
        if len(calls) == 2:
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_second)
    assert main(["clamp", str(ws), "--write"]) == 2
    out, err = capsys.readouterr()
    assert _one_line(err) == (f"budgetlens: error: {ws}/pipelines/b.yaml: cannot replace it"
                              " (Input/output error); nothing was changed; the 1 file already"
                              " replaced was put back\n")
    assert out == ""
    # a.yaml was really replaced by its planned text, then put back by a third replace
    a = str((ws / "pipelines" / "a.yaml").resolve())
    assert [dst for _, dst in calls] == [a, str((ws / "pipelines" / "b.yaml").resolve()), a]
    assert set(_each_file_before_or_planned(ws, before, planned).values()) == {"before"}


def test_when_putting_back_fails_too_the_error_says_where_the_old_bytes_are(
        ws: Path, planned: dict[str, bytes], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(ws)
    count = [0]
    real_replace = os.replace

    def failing_after_first(src: Any, dst: Any) -> None:
        count[0] += 1
        if count[0] >= 2:
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_after_first)
    assert main(["clamp", str(ws), "--write"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"could not put back {ws}/pipelines/a.yaml (its previous bytes are kept in " in err
    monkeypatch.setattr(os, "replace", real_replace)
    after = snapshot(ws)
    kept = [n for n in after if n not in before]
    assert len(kept) == 1 and kept[0] in err and after[kept[0]] == before["pipelines/a.yaml"]
    assert after["pipelines/a.yaml"] == planned["pipelines/a.yaml"]
    assert after["pipelines/b.yaml"] == before["pipelines/b.yaml"]


# ---------------------------------------------------------------- changed since the plan read it
def _after_planning(monkeypatch: pytest.MonkeyPatch, action: Callable[[], None]) -> None:
    real = clamp_cmd.plan_all

    def plan_then_act(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        action()
        return result

    monkeypatch.setattr(clamp_cmd, "plan_all", plan_then_act)


def test_a_file_saved_between_plan_and_write_is_not_overwritten(
        ws: Path, planned: dict[str, bytes], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(ws)
    b = ws / "pipelines" / "b.yaml"
    saved = before["pipelines/b.yaml"] + b"# the user's edit\n"
    _after_planning(monkeypatch, lambda: b.write_bytes(saved))
    assert main(["clamp", str(ws), "--write"]) == 2
    out, err = capsys.readouterr()
    assert _one_line(err) == (f"budgetlens: error: {b}: changed on disk since the plan read it;"
                              " nothing was written (run the command again)\n")
    assert out == ""
    assert b.read_bytes() == saved
    before["pipelines/b.yaml"] = saved
    assert set(_each_file_before_or_planned(ws, before, planned).values()) == {"before"}


def test_the_plan_is_computed_from_the_bytes_it_compares(
        ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # b.yaml changes after its check read it but before plan_all takes its text: the edits
    # were computed on the first version, so that version is what the write compares with
    before = snapshot(ws)
    b = ws / "pipelines" / "b.yaml"
    real = clamp_cmd.clamp_plan_for
    saved = b"# moved down by the user\n" + before["pipelines/b.yaml"]

    def plan_then_save(report: Any, **kwargs: Any) -> Any:
        plan = real(report, **kwargs)
        if report.pipeline.endswith("b.yaml"):
            b.write_bytes(saved)
        return plan

    monkeypatch.setattr(clamp_cmd, "clamp_plan_for", plan_then_save)
    assert main(["clamp", str(ws), "--write"]) == 2
    assert "b.yaml: changed on disk since the plan read it" in _one_line(capsys.readouterr().err)
    assert b.read_bytes() == saved
    assert (ws / "pipelines" / "a.yaml").read_bytes() == before["pipelines/a.yaml"]


# ---------------------------------------------------------------- a read-only target
def test_a_read_only_target_among_two_writes_nothing(
        ws: Path, planned: dict[str, bytes], capsys: pytest.CaptureFixture[str]) -> None:
    # The refusal comes from the mode itself (no write bit for the owner), so it holds when
    # the tests run as root, where permissions would not stop a write.
    before = snapshot(ws)
    b = ws / "pipelines" / "b.yaml"
    b.chmod(0o444)
    assert main(["clamp", str(ws), "--write"]) == 2
    out, err = capsys.readouterr()
    assert _one_line(err) == f"budgetlens: error: {b}: is read-only (mode 444)\n"
    assert out == ""
    assert set(_each_file_before_or_planned(ws, before, planned).values()) == {"before"}
    assert stat.S_IMODE(b.stat().st_mode) == 0o444


def test_the_mode_of_a_written_file_is_kept(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = ws / "pipelines" / "a.yaml"
    a.chmod(0o640)
    assert main(["clamp", str(ws), "--write"]) == 0
    assert capsys.readouterr().err == ""
    assert stat.S_IMODE(a.stat().st_mode) == 0o640
    assert b"max_context_tokens: 1800" not in a.read_bytes()


# ---------------------------------------------------------------- outside the workspace
def test_a_pipeline_symlinked_outside_the_workspace_is_neither_checked_nor_written(
        tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text(PIPELINE, "utf-8")
    link = ws / "pipelines" / "link.yaml"
    link.symlink_to(outside)
    assert main(["check", str(link), "--format", "json"]) == 1
    out = capsys.readouterr().out
    assert '"code": "BL007"' in out
    assert f"pipeline cannot be read: {link}: resolves outside the workspace root {ws}" in out
    assert '"steps": []' in out
    assert main(["clamp", str(ws), "--write"]) == 1      # the error remains
    capsys.readouterr()
    assert outside.read_text("utf-8") == PIPELINE
    assert link.is_symlink()


def test_a_target_swapped_for_a_symlink_leaving_the_workspace_writes_nothing(
        tmp_path: Path, ws: Path, planned: dict[str, bytes], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(ws)
    b = ws / "pipelines" / "b.yaml"
    outside = tmp_path / "outside.yaml"
    outside.write_bytes(before["pipelines/b.yaml"])    # same bytes: only the place differs

    def swap() -> None:
        b.unlink()
        b.symlink_to(outside)

    _after_planning(monkeypatch, swap)
    assert main(["clamp", str(ws), "--write"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert err == (f"budgetlens: error: {b}: resolves to {outside}, outside the workspace root"
                   f" {ws}\n")
    assert outside.read_bytes() == before["pipelines/b.yaml"]
    assert (ws / "pipelines" / "a.yaml").read_bytes() == before["pipelines/a.yaml"]


# ---------------------------------------------------------------- two names, one file
def test_two_symlinked_names_of_one_file_with_edit_parent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "two"
    make_workspace(root, config={"model_context_window": 2000, "model_max_tokens": 500},
                   prompts={"s.txt": "x"}, pipelines={
                       "base.yaml": "settings:\n  max_context_tokens: 1800\nsteps:\n"
                                    "  - {id: a, type: call_model, prompt_key: s}\n",
                       "a.yaml": "extends: base.yaml\nsteps:\n  - {id: a, type: call_model,"
                                 " prompt_key: s, max_output_tokens: 1500}\n"})
    (root / "pipelines" / "b.yaml").symlink_to("a.yaml")
    before = snapshot(root)
    replaced: list[str] = []
    real_replace = os.replace

    def counting(src: Any, dst: Any) -> None:
        replaced.append(str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", counting)
    code = main(["clamp", str(root), "--edit-parent", "--write"])
    out, err = capsys.readouterr()
    assert (root / "pipelines" / "b.yaml").is_symlink()
    if code == 2:
        # the plans of the two names disagree: refused, nothing written
        assert _one_line(err) == (
            f"budgetlens: error: {root}/pipelines/b.yaml: is the same file as"
            f" {root}/pipelines/a.yaml ({(root / 'pipelines' / 'a.yaml').resolve()}) and the"
            " plan gives the two names different texts\n")
        assert snapshot(root) == before and replaced == []
    else:
        # they agree: the real file is written once, and the result checks clean
        assert code == 0, (out, err)
        a = str((root / "pipelines" / "a.yaml").resolve())
        assert replaced.count(a) == 1
        assert main(["check", str(root)]) == 0
