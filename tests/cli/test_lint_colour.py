"""Colour of ``budgetlens check`` in a real process: on a terminal (a pseudo-terminal), on a
pipe, with ``NO_COLOR``, ``FORCE_COLOR`` and ``--color``; and the recorded answer of a command
line (``cache.replay``) is never the one of another colour or another ``.gitignore``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from budgetlens_cli import cache as result_cache
from budgetlens_cli.main import main

CI_WORKSPACE = Path(__file__).resolve().parent / "ci_workspace"
RED_ERROR = "\x1b[1;31merror[BL050]\x1b[0m"
PLAIN_ERROR = "ws/pipelines/small.yaml:18:9: error[BL050]"
SETTLED = 1_600_000_000  # an mtime long before any run: no file is racy


def _settle(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        os.utime(path, (SETTLED, SETTLED), follow_symlinks=False)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    shutil.copytree(CI_WORKSPACE, tmp_path / "ws")
    _settle(tmp_path / "ws")
    return tmp_path


def _environ(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "FORCE_COLOR", "PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT",
                        result_cache.NO_CACHE_ENV, result_cache.CACHE_DIR_ENV)}
    env.update(extra)
    return env


def _check(cwd: Path, *args: str, **env: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "budgetlens_cli", "check", "ws", *args],
                          cwd=cwd, env=_environ(**env), capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.stderr == ""
    return proc.returncode, proc.stdout


def test_a_pipe_gets_no_colour_unless_forced(ws: Path) -> None:
    code, out = _check(ws)
    assert code == 1 and PLAIN_ERROR in out and "\x1b[" not in out
    code, out = _check(ws, FORCE_COLOR="1")
    assert code == 1 and RED_ERROR in out
    code, out = _check(ws, FORCE_COLOR="1", NO_COLOR="1")
    assert "\x1b[" not in out  # NO_COLOR wins over FORCE_COLOR
    code, out = _check(ws, "--color", "always", NO_COLOR="1")
    assert RED_ERROR in out  # the option wins over both
    code, out = _check(ws, "--color", "never", FORCE_COLOR="1")
    assert "\x1b[" not in out


def _on_terminal(cwd: Path, **env: str) -> str:
    """The output of ``check ws`` with a pseudo-terminal as its standard output."""
    leader, follower = os.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "budgetlens_cli", "check", "ws"],
                                cwd=cwd, env=_environ(TERM="xterm", **env), stdout=follower,
                                stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    finally:
        os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=600) == 1
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_terminal_gets_colour_unless_no_color(ws: Path) -> None:
    assert RED_ERROR in _on_terminal(ws)
    out = _on_terminal(ws, NO_COLOR="1")
    assert PLAIN_ERROR in out and "\x1b[" not in out


def test_the_recorded_answer_is_per_colour(ws: Path) -> None:
    """The same command line, once forced into colour, once not: two answers."""
    for _ in range(2):  # the second run of each replays the answer the first recorded
        code, out = _check(ws, FORCE_COLOR="1")
        assert code == 1 and RED_ERROR in out
        code, out = _check(ws, NO_COLOR="1")
        assert code == 1 and "\x1b[" not in out and PLAIN_ERROR in out
    assert len(list((ws / ".budgetlens_cache").glob("*/*.answer"))) == 2


def test_a_changed_gitignore_is_not_answered_from_the_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a", "b"):
        shutil.copytree(CI_WORKSPACE, tmp_path / "ws" / name)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("", "utf-8")
    _settle(tmp_path)
    monkeypatch.setattr(result_cache, "RACY_NS", 0)  # written just now, by the test alone
    monkeypatch.chdir(tmp_path)
    for name in ("NO_COLOR", "FORCE_COLOR", "PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT",
                 result_cache.NO_CACHE_ENV, result_cache.CACHE_DIR_ENV):
        monkeypatch.delenv(name, raising=False)
    outputs = []
    for _ in range(2):
        assert main(["check", "ws", "--no-table"]) == 1
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "ws/b/pipelines" in outputs[0]
    assert len(list(Path(".budgetlens_cache").glob("*/*.answer"))) == 1
    (tmp_path / ".gitignore").write_text("ws/b/\n", "utf-8")
    os.utime(tmp_path / ".gitignore", (SETTLED + 10, SETTLED + 10))
    assert main(["check", "ws", "--no-table"]) == 1
    out = capsys.readouterr().out
    assert "ws/a/pipelines" in out and "ws/b/pipelines" not in out
