"""The language server publishes with the CLI's suppression comments applied
(``budgetlens.contract.lint.apply_lint``): a ``# budgetlens: ignore[BL050]`` typed on the step's
line withdraws its diagnostic and the prompt file's, and a comment that hides nothing gets a
BL080 warning at the comment."""

from __future__ import annotations

import json
from pathlib import Path

from lsprotocol import types

from .harness import codes_of, find, running_server

STEP = "  - id: write_report"


async def test_a_typed_suppression_comment_withdraws_the_diagnostic(workspace: Path) -> None:
    text = (workspace / "pipelines/long_report.yaml").read_text("utf-8")
    assert text.count(STEP + "\n") == 1
    async with running_server(workspace) as ed:
        uri = ed.open("pipelines/long_report.yaml")
        prompt = ed.uri("prompts/report.txt")
        await ed.wait_diagnostics(uri, lambda ds: codes_of(ds) == ["BL050"])
        await ed.wait_diagnostics(prompt, lambda ds: codes_of(ds) == ["BL050"])
        ed.replace_all(uri, text.replace(STEP, STEP + "  # budgetlens: ignore[BL050]"))
        await ed.wait_diagnostics(uri, lambda ds: ds == [])
        await ed.wait_diagnostics(prompt, lambda ds: ds == [])
        unused = text.replace(STEP, STEP + "  # budgetlens: ignore[BL061]")
        ed.replace_all(uri, unused)
        diags = await ed.wait_diagnostics(uri, lambda ds: sorted(codes_of(ds))
                                          == ["BL050", "BL080"])
    [warning] = [d for d in diags if d.code == "BL080"]
    line, col = find(unused, "# budgetlens")
    assert (warning.range.start.line, warning.range.start.character) == (line, col)
    assert warning.severity == types.DiagnosticSeverity.Warning
    assert warning.message == "unused suppression: no BL061 diagnostic on this line"


async def test_config_json_lint_block_applies_in_the_editor(workspace: Path) -> None:
    """config.json's ``lint`` block turns BL050 off for the pipeline, as ``check`` does; the
    same publish carries the BL080 of a comment the block made useless."""
    config = json.loads((workspace / "config.json").read_text("utf-8"))
    config["lint"] = {"per_file_ignores": {"pipelines/long_report.yaml": ["BL050"]}}
    (workspace / "config.json").write_text(json.dumps(config, indent=2), "utf-8")
    text = (workspace / "pipelines/long_report.yaml").read_text("utf-8")
    async with running_server(workspace) as ed:
        uri = ed.open("pipelines/long_report.yaml",
                      text.replace(STEP, STEP + "  # budgetlens: ignore[BL050]"))
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL080" in codes_of(ds))
    assert codes_of(diags) == ["BL080"]
