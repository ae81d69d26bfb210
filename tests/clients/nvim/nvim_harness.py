"""Run a Lua script in real headless Neovim and read back the JSON results it wrote.

The script uses ``tests/clients/nvim/lua/nvim_harness.lua`` (``H.record``, ``H.wait``,
``H.run``): results are written after every step, so a timeout still shows how far the script
got. A missing ``nvim`` is a test failure, not a skip (scripts/run_tests.sh installs
Debian's neovim).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from budgetlens.tokens.core import get_tokenizer
from tests.waiting import ANSWER_GUARD, HANG_GUARD

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
EXAMPLES = REPO / "examples"
PLUGIN_DIR = REPO / "editor-clients" / "nvim"
LUA_DIR = HERE / "lua"
VENV_BIN = Path(sys.executable).parent


def nvim_binary() -> str:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.fail("nvim is not installed: run scripts/run_tests.sh (it installs Debian's neovim)")
    return nvim


def copy_examples(tmp_path: Path) -> Path:
    """A private copy of the example workspace (tests edit and save files in it)."""
    if not (EXAMPLES / "config.json").is_file():
        pytest.fail(f"the example workspace is missing: {EXAMPLES / 'config.json'}")
    workspace = tmp_path / "workspace"
    shutil.copytree(EXAMPLES, workspace)
    return workspace


def _kill_pid(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def run_nvim_script(
    script: Path,
    *,
    workspace: Path,
    tmp_path: Path,
    init: str = "NONE",
    timeout: float = HANG_GUARD,
    extra_env: dict[str, str] | None = None,
    nvim: str | None = None,
) -> dict[str, Any]:
    """Run ``script`` in ``nvim --headless`` and return the results it recorded.

    The budgetlens of this venv is first on PATH. Neovim's state, cache and config live under
    ``tmp_path``. On timeout Neovim and any server PID it recorded are killed. ``nvim`` is
    the binary to run (default: ``nvim`` on PATH, Debian's 0.7.2).
    """
    results = tmp_path / "nvim-results.json"
    home = tmp_path / "nvim-home"
    for sub in ("config", "data", "state", "cache"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(
        {
            "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "NVIM_LOG_FILE": str(home / "nvim.log"),
            "BUDGETLENS_NVIM_RESULTS": str(results),
            "BUDGETLENS_NVIM_WORKSPACE": str(workspace),
            "BUDGETLENS_NVIM_PLUGIN": str(PLUGIN_DIR),
            # every wait of the Lua scripts: a hang guard only (tests/waiting.py)
            "BUDGETLENS_TEST_WAIT_MS": str(int(ANSWER_GUARD * 1000)),
        }
    )
    env.update(extra_env or {})
    command = [
        nvim or nvim_binary(), "--headless", "--clean", "-n", "-i", "NONE", "-u", init,
        "--cmd", f"set rtp^={LUA_DIR.parent}",
        "-c", f"luafile {script}",
    ]
    proc = subprocess.Popen(
        command, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_pid(proc.pid)
        stdout, stderr = proc.communicate()
        timed_out = True
    data: dict[str, Any] = {}
    if results.is_file():
        data = json.loads(results.read_text(encoding="utf-8"))
    server_pid = data.get("server_pid")
    if isinstance(server_pid, int):
        _kill_pid(server_pid)  # normally already gone: nvim stops its clients on exit
    if timed_out:
        pytest.fail(
            f"nvim timed out after {timeout}s; steps done: {data.get('steps')}\n"
            f"error: {data.get('error')}\nstderr: {stderr[-3000:]}\nstdout: {stdout[-3000:]}"
        )
    if not data:
        pytest.fail(f"nvim wrote no results (exit {proc.returncode})\nstderr: {stderr[-3000:]}")
    if data.get("error") or not data.get("done"):
        pytest.fail(
            f"the nvim script failed after steps {data.get('steps')}:\n{data.get('error')}\n"
            f"messages: {data.get('messages')}\nstderr: {stderr[-3000:]}"
        )
    return data


def write_report_budget() -> dict[str, int]:
    """The write_report step of long_report.yaml, by hand from the example files."""
    config = json.loads((EXAMPLES / "config.json").read_text())
    counter = get_tokenizer(config["tokenizer"])
    prompt = (EXAMPLES / "prompts" / "report.txt").read_text(encoding="utf-8")
    # the template of write_report with every {placeholder} emptied and {{ }} unescaped
    template = ("Outline:\n\n\nSource material:\n\n\n"
                'Write the full report as JSON: {"title": ..., "sections": [...]}\n')
    fixed = counter.count(prompt) + counter.count(template) + config["format_overhead_tokens"]
    context, output, margin = 6144, 2048, 128  # long_report.yaml, base.yaml
    window = config["model_context_window"]
    total = fixed + context + output + margin
    return {"fixed": fixed, "context": context, "output": output, "margin": margin,
            "total": total, "window": window}
