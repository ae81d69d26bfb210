"""A workspace whose pipeline's ``extends`` parent is a symbolic link leaving it, and the
relink the tests make (tests of inputs a check leaves unread because they resolve outside
the workspace: tests/core/contract/test_outside_inputs.py, tests/cli/test_outside_inputs.py,
tests/core/contract/test_prompt_relinked.py)."""

from __future__ import annotations

import os
from pathlib import Path

CONFIG = '{"model_context_window": 8192, "model_max_tokens": 512, "prompts_dir": "prompts"}'
CHILD = ("extends: base.yaml\nsteps:\n  - id: s\n    type: call_model\n"
         "    prompt_key: sys\n    max_output_tokens: 100\n")
BASE = "settings:\n  max_context_tokens: 1000\n"


def extends_outside(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """``ws`` with ``pipelines/p.yaml`` extending ``base.yaml``, a link to a parent outside
    ``ws``; an inside copy of that parent waits in ``kept/``. Returns (ws, link, outside
    parent, inside parent)."""
    ws = tmp_path / "ws"
    (ws / "pipelines").mkdir(parents=True)
    (ws / "prompts").mkdir()
    (ws / "kept").mkdir()
    (ws / "config.json").write_text(CONFIG)
    (ws / "prompts" / "sys.txt").write_text("hello world prompt\n")
    (ws / "pipelines" / "p.yaml").write_text(CHILD)
    outside = tmp_path / "outside-base.yaml"
    inside = ws / "kept" / "base.yaml"
    outside.write_text(BASE)
    inside.write_text(BASE)
    link = ws / "pipelines" / "base.yaml"
    os.symlink(outside, link)
    return ws, link, outside, inside


def relink(link: Path, target: Path) -> None:
    """Point the symbolic link ``link`` at ``target`` instead."""
    link.unlink()
    os.symlink(target, link)


def workspace_of_links(tmp_path: Path, real: Path) -> tuple[Path, Path]:
    """``tmp_path/ws``, a link to the workspace ``real``, and ``tmp_path/B``, a folder of
    links to ``real``'s config.json, pipelines and prompts (the very same files): relinking
    ``ws`` to ``B`` moves the root (config.json's folder) but no file. Returns (ws, B)."""
    links = tmp_path / "B"
    links.mkdir()
    for name in ("config.json", "pipelines", "prompts"):
        os.symlink(real / name, links / name)
    ws = tmp_path / "ws"
    os.symlink(real, ws)
    return ws, links
