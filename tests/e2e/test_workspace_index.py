"""Indexing on initialize: a large workspace reports ``$/progress``; a small one does not."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from tests.waiting import until

from .harness import caps, codes_of, copy_examples, running_server


async def test_large_workspace_is_indexed_with_progress(workspace: Path) -> None:
    support = (workspace / "pipelines/support.yaml").read_text("utf-8")
    for i in range(30):
        (workspace / f"pipelines/copy_{i:02d}.yaml").write_text(support, "utf-8")
    async with running_server(workspace) as ed:
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"),
                                  lambda ds: "BL050" in codes_of(ds))
        # a request is answered after the initial indexing finished
        await ed.client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=ed.uri("pipelines/copy_00.yaml"))))
        # the end of the progress may trail the lens answer: awaited
        await until(lambda: any(v and isinstance(v[-1], types.WorkDoneProgressEnd)
                                for v in ed.client.progress_reports.values()),
                    "the end of the progress")
        reports = list(ed.client.progress_reports.values())
    [values] = [v for v in reports if v and isinstance(v[0], types.WorkDoneProgressBegin)]
    assert values[0].title == "budgetlens: checking pipelines"
    assert isinstance(values[-1], types.WorkDoneProgressEnd)
    done = [v for v in values if isinstance(v, types.WorkDoneProgressReport)]
    assert done and done[-1].message == "35/35"  # 5 example pipelines + 30 copies


async def test_small_workspace_needs_no_progress(workspace: Path) -> None:
    async with running_server(workspace, capabilities=caps()) as ed:
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"),
                                  lambda ds: "BL050" in codes_of(ds))
        assert not any(ed.client.progress_reports.values())


async def test_an_added_workspace_folder_is_indexed(workspace: Path, tmp_path: Path) -> None:
    other = copy_examples(tmp_path / "second")
    async with running_server(workspace) as ed:
        await ed.wait_diagnostics(ed.uri("pipelines/long_report.yaml"),
                                  lambda ds: "BL050" in codes_of(ds))
        ed.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=other.resolve().as_uri(), name="second")],
                removed=[])))
        second = (other / "pipelines/long_report.yaml").resolve().as_uri()
        await ed.wait_diagnostics(second, lambda ds: "BL050" in codes_of(ds))
