"""The CLI reads only regular files: a FIFO with no writer (or a device) named as an input is
refused at once with one line and exit status 2, instead of blocking forever; ``-`` still
reads standard input. Each command runs in a real process with a timeout, so a hang fails
the test instead of hanging the suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import HANG_GUARD

TIMEOUT = HANG_GUARD  # a hang guard only


def _run(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "budgetlens_cli", *args], cwd=cwd,
                          input=stdin if stdin is not None else "", capture_output=True,
                          text=True, timeout=TIMEOUT)


@pytest.fixture()
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


def _good_inputs(tmp_path: Path) -> dict[str, Path]:
    docs = tmp_path / "docs.json"
    docs.write_text(json.dumps([{"id": "a", "schema_type": "t", "data": "hello"}]), "utf-8")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"window": 1000}), "utf-8")
    text = tmp_path / "text.txt"
    text.write_text("[1, 2", "utf-8")
    return {"docs": docs, "plan": plan, "text": text}


# Every subcommand argument that names an input file read through cli/io.py.
CASES: dict[str, list[str]] = {
    "contexts": ["contexts", "{fifo}"],
    "tokens": ["tokens", "{fifo}"],
    "tokens, second file": ["tokens", "{text}", "{fifo}"],
    "merge, base": ["merge", "{fifo}", "{text}"],
    "merge, fragment": ["merge", "{text}", "{fifo}"],
    "inject": ["inject", "{fifo}"],
    "pack, documents": ["pack", "{fifo}", "--intent", "x"],
    "pack, intent map": ["pack", "{docs}", "--intent", "x", "--map", "{fifo}"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_fifo_without_writer_is_refused_with_one_line(case: str, tmp_path: Path,
                                                         fifo: Path) -> None:
    names = {"fifo": str(fifo), **{k: str(v) for k, v in _good_inputs(tmp_path).items()}}
    args = [a.format(**names) for a in CASES[case]]
    proc = _run(args, tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr == f"budgetlens: error: {fifo}: not a regular file\n"
    assert proc.stdout == ""


def test_a_character_device_is_refused(tmp_path: Path) -> None:
    proc = _run(["tokens", "/dev/zero"], tmp_path)   # would never end if read
    assert proc.returncode == 2
    assert proc.stderr == "budgetlens: error: /dev/zero: not a regular file\n"


def test_a_folder_is_still_named_as_one(tmp_path: Path) -> None:
    proc = _run(["contexts", str(tmp_path)], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"budgetlens: error: {tmp_path}: is a directory, expected a file\n"


def test_standard_input_is_still_read(tmp_path: Path) -> None:
    fragment = tmp_path / "fragment.txt"
    fragment.write_text("1, 2]", "utf-8")
    proc = _run(["merge", "-", str(fragment)], tmp_path, stdin="[0, 1")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "[0, 1, 2]\n", "")


def test_check_and_clamp_report_a_fifo_pipeline_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_context_window": 8192}', "utf-8")
    (tmp_path / "pipelines").mkdir()
    pipe = tmp_path / "pipelines" / "p.yaml"
    os.mkfifo(pipe)
    proc = _run(["check", str(pipe)], tmp_path)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "BL007" in proc.stdout and "not a regular file" in proc.stdout
    proc = _run(["clamp", str(pipe)], tmp_path)    # the error remains: nothing to plan
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stdout.startswith("0 changes planned in 0 files\n")
