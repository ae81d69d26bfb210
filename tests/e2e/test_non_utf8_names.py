"""Inputs that silenced the language server (issue 30, cases 11 and 10).

On Linux a file name is bytes; ``pipelines/bad\\xff.yaml`` is a legal name. Building its URI
raised UnicodeEncodeError and failed the whole publish batch: the server published no
diagnostics at all, and ``showBudgetReport`` failed with -32603. Now its URI percent-encodes
the byte (``bad%FF.yaml``), the other pipelines' diagnostics arrive, and the report works.
Expected codes are those of examples/ (long_report.yaml is over budget: BL050).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from .harness import Editor, codes_of, running_server

pytestmark = pytest.mark.skipif(sys.platform == "darwin" or os.name == "nt",
                                reason="the file system must accept any bytes in a name")


async def _run(ed: Editor, command: str, *arguments: object) -> Any:
    return await ed.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=command, arguments=list(arguments)))


async def test_a_non_utf8_pipeline_name_does_not_silence_the_others(workspace: Path) -> None:
    pipelines = os.fsencode(workspace / "pipelines")
    with open(os.path.join(pipelines, b"bad\xff.yaml"), "wb") as fh:
        fh.write((workspace / "pipelines/long_report.yaml").read_bytes())
    async with running_server(workspace) as ed:
        # the normal over-budget pipeline, not opened: published from the workspace index
        normal = ed.uri("pipelines/long_report.yaml")
        assert "BL050" in codes_of(await ed.wait_diagnostics(
            normal, lambda ds: "BL050" in codes_of(ds)))
        # the odd one gets its own diagnostics, at the URI with its byte percent-encoded
        odd = (workspace / "pipelines").resolve().as_uri() + "/bad%FF.yaml"
        assert "BL050" in codes_of(await ed.wait_diagnostics(
            odd, lambda ds: "BL050" in codes_of(ds)))
        result = await _run(ed, "budgetlens.showBudgetReport", {"uri": normal})
        assert result["text"].startswith("long_report.yaml: window 8192")
        odd_report = await _run(ed, "budgetlens.showBudgetReport", {"uri": odd})
        [pipeline] = odd_report["pipelines"]
        assert os.fsencode(pipeline["pipeline"]).endswith(b"/pipelines/bad\xff.yaml")


async def test_a_megabyte_of_spaces_in_a_prompt_is_counted_in_the_editor(
        workspace: Path) -> None:
    """Issue 30, case 10: tiktoken panicked on the prompt (a BaseException the analysis did
    not catch) and the editor kept showing the previous "fits". Expected numbers from
    tiktoken directly: a text of spaces only is one piece, merged by tiktoken itself."""
    from budgetlens.tokens.core import get_tokenizer

    spaces = 1_000_000
    (workspace / "prompts" / "report.txt").write_text(" " * spaces, "utf-8")
    enc = get_tokenizer("cl100k_base")._encoding  # type: ignore[attr-defined]
    system = len(enc._encode_single_piece(b" " * spaces))
    async with running_server(workspace) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        # the prompt alone takes 95% of the 8,192 window: no clamp can fit the steps
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL052" in codes_of(ds))
        assert codes_of(diags) == ["BL052", "BL052"]
        assert all(f"system prompt {system} is 95% of the 8192 window" in d.message
                   for d in diags), [d.message for d in diags]
