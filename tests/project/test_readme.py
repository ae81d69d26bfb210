"""The README stays true: its library example runs, its command table matches the CLI, and its
code table matches the registry."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

from budgetlens.codes import CODES
from budgetlens_cli.main import SUBCOMMANDS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text("utf-8")


def test_the_library_example_runs_and_prints_what_its_comments_say() -> None:
    (block,) = re.findall(r"```python\n(.*?)```", README, re.S)
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    printed = out.getvalue()
    assert "write_report 8421 / 8192 over" in printed
    assert "settings.max_context_tokens 6144 -> 5915" in printed
    assert "['user: hi', 'assistant: hello!']" in printed
    assert 'items[0].text {"items": [{"id": 1, "text": "a long answer that was cu"}]}' in printed


def test_every_subcommand_is_in_the_command_table() -> None:
    listed = set(re.findall(r"^\| `budgetlens (\w+)", README, re.M))
    assert listed == set(SUBCOMMANDS)


def test_every_diagnostic_code_is_in_the_code_table() -> None:
    listed = re.findall(r"^\| \[(BL\d{3})\]\(docs/diagnostics\.md#bl\d{3}\) \|", README, re.M)
    assert listed == list(CODES)
