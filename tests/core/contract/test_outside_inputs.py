"""Inputs a check leaves unread because they resolve outside the workspace are inputs all
the same: relinked into it, no cache keeps the error (a reviewer's reproductions after stop
23; each failed on 2938c74). A parent named by ``extends`` (BL022) and the pipeline itself
(BL007)."""

from __future__ import annotations

import os
from pathlib import Path

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import CheckOptions, check_pipeline
from budgetlens.files import DiskFiles
from tests.outside_links import BASE, CHILD, extends_outside, relink


def test_extends_parent_relinked_into_the_workspace_core_cache(tmp_path: Path) -> None:
    ws, link, _, inside = extends_outside(tmp_path)
    p, opts, cache = ws / "pipelines" / "p.yaml", CheckOptions(workspace_root=ws), BudgetCache()
    first = check_pipeline(p, files=DiskFiles(), options=opts, cache=cache)
    assert "BL022" in [d.code for d in first.diagnostics]
    relink(link, inside)
    fresh = check_pipeline(p, files=DiskFiles(), options=opts)
    assert "BL022" not in [d.code for d in fresh.diagnostics]
    again = check_pipeline(p, files=DiskFiles(), options=opts, cache=cache)
    assert [d.code for d in again.diagnostics] == [d.code for d in fresh.diagnostics]



def test_the_unread_parent_is_an_input_of_the_report(tmp_path: Path) -> None:
    """The language server checks a pipeline again when an input changes: the parent named
    by ``extends`` is one though it was not read."""
    ws, link, _, _ = extends_outside(tmp_path)
    report = check_pipeline(ws / "pipelines" / "p.yaml", files=DiskFiles(),
                            options=CheckOptions(workspace_root=ws))
    assert "BL022" in [d.code for d in report.diagnostics]
    assert str(link) in report.inputs


def test_a_pipeline_relinked_into_the_workspace_core_cache(tmp_path: Path) -> None:
    ws, _, outside, _ = extends_outside(tmp_path)
    (outside.parent / "outside-p.yaml").write_text(BASE + CHILD.split("\n", 1)[1])
    (ws / "kept" / "p.yaml").write_text(BASE + CHILD.split("\n", 1)[1])
    link = ws / "pipelines" / "q.yaml"
    os.symlink(outside.parent / "outside-p.yaml", link)
    opts, cache = CheckOptions(workspace_root=ws), BudgetCache()
    assert "BL007" in [d.code for d in check_pipeline(link, files=DiskFiles(), options=opts,
                                                       cache=cache).diagnostics]
    relink(link, ws / "kept" / "p.yaml")
    fresh = check_pipeline(link, files=DiskFiles(), options=opts)
    assert "BL007" not in [d.code for d in fresh.diagnostics]
    again = check_pipeline(link, files=DiskFiles(), options=opts, cache=cache)
    assert [d.code for d in again.diagnostics] == [d.code for d in fresh.diagnostics]
