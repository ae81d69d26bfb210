"""A file watcher event that names a symbolic link nobody reads by that name: the file it
leads to is read by its real name (ws/kept/sys.txt), the watcher reports the change under
the link (ws/alias/sys.txt: a client watching the folder the user wrote through). Before,
``dependents`` had no key for the link's name, nothing was re-checked and the editor kept
the old count where a fresh server counts the new text."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from budgetlens_lsp.workspace_index import IndexMode, Snapshot, norm
from tests.core.contract.helpers import make_workspace
from tests.server.linked_helpers import CONFIG, LONGER, fresh, pipeline_text, tokens


def _read_by_real_name(tmp_path: Path, folder_link: bool) -> tuple[Path, str, str, str]:
    """ws/prompts/sys.txt (read by the pipeline) and a link to it elsewhere in the
    workspace, to the file itself or to its folder; (ws, pipeline, prompt, the link's
    name of it)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG,
                        pipelines={"p.yaml": pipeline_text("sys")},
                        prompts={"sys.txt": "hello prompt\n"})
    prompt = ws / "prompts" / "sys.txt"
    if folder_link:
        os.symlink(ws / "prompts", ws / "alias")
    else:
        (ws / "alias").mkdir()
        os.symlink(prompt, ws / "alias" / "sys.txt")
    return ws, norm(ws / "pipelines" / "p.yaml"), norm(prompt), norm(ws / "alias" / "sys.txt")


@pytest.mark.parametrize("folder_link", [False, True], ids=["file-link", "folder-link"])
def test_a_change_reported_under_a_link_re_checks_the_readers_of_its_file(
        tmp_path: Path, folder_link: bool) -> None:
    ws, pipeline, prompt, alias = _read_by_real_name(tmp_path, folder_link)
    snap = Snapshot(roots=(norm(ws),))
    index = fresh(snap)
    before = tokens(index, pipeline)
    Path(prompt).write_text(LONGER, "utf-8")
    changes = index.update(snap, frozenset([alias]), IndexMode.INCREMENTAL)
    assert pipeline in changes.reports
    assert tokens(index, pipeline) == tokens(fresh(snap), pipeline) > before


def test_an_unread_file_s_change_resolves_it_once_and_checks_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The price of it: a watched file no report reads by any name is resolved once per
    event (one ``os.path.realpath``), and nothing is checked; a file read by its own name
    is not resolved at all."""
    ws, _, prompt, _ = _read_by_real_name(tmp_path, folder_link=False)
    other = ws / "notes.txt"
    other.write_text("not an input\n", "utf-8")
    snap = Snapshot(roots=(norm(ws),))
    index = fresh(snap)
    calls: list[str] = []
    real = os.path.realpath

    def counted(path: Any, *args: Any, **kwargs: Any) -> str:
        calls.append(str(path))
        return real(path, *args, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(os.path, "realpath", counted)
        changes = index.update(snap, frozenset([norm(other)]), IndexMode.INCREMENTAL)
    assert (calls, changes.checked) == ([norm(other)], 0)
    calls.clear()
    with monkeypatch.context() as m:
        m.setattr(os.path, "realpath", counted)
        changes = index.update(snap, frozenset([prompt]), IndexMode.INCREMENTAL)
    assert changes.checked == 1
    assert norm(prompt) not in calls


def test_a_change_reported_under_a_link_re_checks_the_readers_of_its_real_name_too(
        tmp_path: Path) -> None:
    """Pipeline a reads prompts/sys.txt, a link to prompts/real.txt, which pipeline b reads
    by its own name; the watcher names the link. Before, the link's readers (a) were
    checked again and the file's other readers (b) kept the old count."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG,
                        pipelines={"a.yaml": pipeline_text("sys"),
                                   "b.yaml": pipeline_text("real")},
                        prompts={"real.txt": "hello prompt\n"})
    os.symlink(ws / "prompts" / "real.txt", ws / "prompts" / "sys.txt")
    snap = Snapshot(roots=(norm(ws),))
    index = fresh(snap)
    (ws / "prompts" / "real.txt").write_text(LONGER, "utf-8")
    index.update(snap, frozenset([norm(ws / "prompts" / "sys.txt")]), IndexMode.INCREMENTAL)
    now = fresh(snap)
    for name in ("a.yaml", "b.yaml"):
        pipeline = norm(ws / "pipelines" / name)
        assert tokens(index, pipeline) == tokens(now, pipeline), name
