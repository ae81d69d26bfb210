"""The README starts with how a user installs and runs budgetlens (issue 35): the first
section is "Install", within the first 40 lines, and its commands are ones the CLI has."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from budgetlens_cli.main import SUBCOMMANDS

README = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")


def test_the_first_section_is_install_near_the_top() -> None:
    lines = README.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("## "))
    assert lines[first] == "## Install"
    assert first < 40


def test_the_install_block_installs_then_starts_and_checks_a_workspace() -> None:
    section = README.split("## Install", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    commands = [shlex.split(line, comments=True) for line in block[1].splitlines()]
    commands = [c for c in commands if c]
    assert commands[0][:2] == ["pipx", "install"]
    used = [c[1] for c in commands if c[0] == "budgetlens"]
    assert used == ["init", "check"]  # start from a workspace that checks, then check it
    assert set(used) <= set(SUBCOMMANDS)
    init = next(c for c in commands if c[:2] == ["budgetlens", "init"])
    check = next(c for c in commands if c[:2] == ["budgetlens", "check"])
    assert init[2] == check[2]  # the folder init made is the one checked
