"""Standard output closed by its reader before the output is written whole (``budgetlens
check | head -1``): exit status 141, as a process ended by SIGPIPE, and nothing on standard
error. It was 0, so ``set -o pipefail; budgetlens check | head`` passed a workspace with
errors. Real processes, their standard output a pipe whose reading end is already closed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE (13), as a shell reports a process SIGPIPE ended
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _closed_output(args: list[str], cwd: Path) -> tuple[int, str]:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "budgetlens_cli", *args], cwd=cwd,
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    return tmp_path


@pytest.mark.parametrize("args", [
    ["check", "ws", "--no-cache"],  # the output of many pipelines
    ["check", "ws/pipelines/chat.yaml", "--no-cache"],  # a few lines, written at exit
    ["check", "ws", "--format", "json", "--no-cache"],
])
def test_a_closed_output_is_exit_status_141_never_0(workspace: Path, args: list[str]) -> None:
    full = subprocess.run([sys.executable, "-m", "budgetlens_cli", *args], cwd=workspace,
                          capture_output=True, text=True, timeout=120)
    assert full.stdout  # there is output to lose
    assert _closed_output(args, workspace) == (EXIT_BROKEN_PIPE, "")


def test_a_replayed_answer_to_a_closed_output_is_141(workspace: Path) -> None:
    env_args = ["check", "ws", "--cache-dir", str(workspace / "cache")]
    first = subprocess.run([sys.executable, "-m", "budgetlens_cli", *env_args], cwd=workspace,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 1
    for _ in range(3):  # the answer may be recorded by the first or the second run (racy)
        subprocess.run([sys.executable, "-m", "budgetlens_cli", *env_args], cwd=workspace,
                       capture_output=True, timeout=120)
    assert list((workspace / "cache").glob("*/*.answer"))
    assert _closed_output(env_args, workspace) == (EXIT_BROKEN_PIPE, "")


def test_an_unbuffered_output_cut_short_is_141_too(workspace: Path) -> None:
    """Found by review: with ``PYTHONUNBUFFERED=1`` (many CI images set it) standard output
    is a raw file; a write cut short when the reader goes away (``| head -c 100``) counted as
    written and the run exited 0. Here the reader takes 100 bytes of a longer output than a
    pipe holds, then closes its end while the write waits."""
    pipeline = workspace / "ws" / "pipelines" / "chat.yaml"
    for i in range(400):
        shutil.copy(pipeline, pipeline.with_name(f"copy{i:03}.yaml"))
    (workspace / "ws" / "pipelines" / "long_report.yaml").unlink()  # no error: 0 if unseen
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = ["check", "ws", "--no-cache", "--format", "json"]
    full = subprocess.run([sys.executable, "-m", "budgetlens_cli", *args], cwd=workspace,
                          env=env, capture_output=True, timeout=120)
    assert full.returncode == 0 and len(full.stdout) > 4 * 65536
    proc = subprocess.Popen([sys.executable, "-m", "budgetlens_cli", *args], cwd=workspace,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert len(proc.stdout.read(100)) == 100
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert err == b""


def test_a_broken_pipe_leaves_a_file_in_place_of_stdout_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: the broken pipe's clean-up pointed whatever descriptor ``sys.stdout``
    had at /dev/null (a test's capture file); only descriptor 1 is the process's output."""
    from budgetlens_cli import main as cli_main
    from budgetlens_cli import tokens_cmd

    def broken(args: object) -> int:
        raise BrokenPipeError

    monkeypatch.setattr(tokens_cmd, "run", broken)
    (tmp_path / "p.txt").write_text("hello", "utf-8")
    with open(tmp_path / "out.txt", "w", encoding="utf-8") as stand_in:
        monkeypatch.setattr(sys, "stdout", stand_in)
        assert stand_in.fileno() != 1
        assert cli_main.main(["tokens", str(tmp_path / "p.txt")]) == EXIT_BROKEN_PIPE
        assert os.path.samefile(f"/proc/self/fd/{stand_in.fileno()}", tmp_path / "out.txt")


def test_an_unbuffered_stream_in_place_of_stdout_is_left_open_and_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by CI: pytest's capture puts a text stream over a raw file (as ``python -u``
    makes standard output) in place of ``sys.stdout``; the buffered writer meant for the
    process's own unbuffered output closed that file when it went away."""
    import io

    from budgetlens_cli.main import main

    (tmp_path / "p.txt").write_text("hello there", "utf-8")
    raw = open(tmp_path / "out.txt", "wb", buffering=0)  # noqa: SIM115 - closed below
    stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    monkeypatch.setattr(sys, "stdout", stream)
    try:
        assert main(["tokens", str(tmp_path / "p.txt")]) == 0
        assert sys.stdout is stream and not raw.closed
        stream.write("after\n")
    finally:
        monkeypatch.undo()
        stream.close()
    written = (tmp_path / "out.txt").read_text("utf-8")
    assert "p.txt" in written and written.endswith("after\n")


def _stdout_closed_from_the_start(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command run as ``budgetlens ... >&-``: descriptor 1 closed before it starts."""
    return subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "budgetlens_cli", *args],
        cwd=cwd, stderr=subprocess.PIPE, text=True, timeout=120)


@pytest.mark.parametrize("args", [
    ["check", "ws", "--no-cache"],
    ["check", "ws"],  # the cached answer's way
    ["tokens", "ws/prompts/chat.txt"],
    ["--version"],
])
def test_output_closed_from_the_start_is_one_clear_line_and_exit_status_2(
        workspace: Path, args: list[str]) -> None:
    proc = _stdout_closed_from_the_start(args, workspace)
    assert (proc.returncode, proc.stderr) == (
        2, "budgetlens: error: standard output is closed: nothing can be written\n")


@pytest.mark.parametrize("redirect", [">&-", "<&-"])
def test_serve_over_a_closed_stdio_is_a_usage_error_not_a_crash(workspace: Path,
                                                                 redirect: str) -> None:
    proc = subprocess.run(
        ["sh", "-c", f'exec "$@" {redirect}', "sh", sys.executable, "-m", "budgetlens_cli",
         "serve"], cwd=workspace, stderr=subprocess.PIPE, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (
        2, "budgetlens: error: standard input or output is closed: nothing to serve over"
           " (--tcp PORT serves over TCP)\n")


def test_schema_to_a_file_needs_no_standard_output(workspace: Path) -> None:
    out = workspace / "schema.json"
    proc = _stdout_closed_from_the_start(["schema", "-o", str(out)], workspace)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert json.loads(out.read_text("utf-8"))["$schema"]
