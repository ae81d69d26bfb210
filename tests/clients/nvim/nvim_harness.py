"""Run a Lua script in real headless Neovim and read back the JSON results it wrote.

The script uses ``tests/clients/nvim/lua/nvim_harness.lua`` (``H.record``, ``H.wait``,
``H.run``): results are written after every step, so a timeout still shows how far the script
got. A missing ``nvim`` is a test failure, not a skip (scripts/run_tests.sh installs
Debian's neovim).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from budgetlens.tokens.core import get_tokenizer
from tests.clients.editors import EXAMPLES, REPO, copy_examples, kill_pid, private_dirs, wait_for
from tests.waiting import ANSWER_GUARD, HANG_GUARD

HERE = Path(__file__).resolve().parent
PLUGIN_DIR = REPO / "editor-clients" / "nvim"
LUA_DIR = HERE / "lua"
__all__ = ["copy_examples"]  # of tests/clients/editors.py, imported from here by the tests


def nvim_binary() -> str:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.fail("nvim is not installed: run scripts/run_tests.sh (it installs Debian's neovim)")
    return nvim


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
    env = dict(os.environ)
    env.update(private_dirs(home))
    env.update(
        {
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
    stdout, stderr, timed_out, data = wait_for(proc, results, timeout, kill_pid)
    server_pid = data.get("server_pid")
    if isinstance(server_pid, int):
        kill_pid(server_pid)  # normally already gone: nvim stops its clients on exit
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


def run_in_examples(tmp_path_factory: pytest.TempPathFactory, name: str, script: Path,
                    **options: Any) -> dict[str, Any]:
    """:func:`run_nvim_script` in a private copy of the example workspace, under a new folder
    ``name`` (``options`` go to it); the results also hold that copy's path (``workspace``)."""
    tmp = tmp_path_factory.mktemp(name)
    workspace = copy_examples(tmp)
    return run_nvim_script(script, workspace=workspace, tmp_path=tmp, **options) | {
        "workspace": str(workspace)}
