"""A file watcher event that names a symbolic link nobody reads by that name: the file it
leads to is read by its real name (ws/kept/sys.txt), the watcher reports the change under
the link (ws/alias/sys.txt: a client watching the folder the user wrote through). Before,
``dependents`` had no key for the link's name, nothing was re-checked and the editor kept
the old count where a fresh server counts the new text.

A chain of symbolic links: the pipeline reads ws/prompts/sys.txt, a link to
ws/mid/sys.txt, itself a link to a file. Reports record (name, real path) of the name they
read only (prompts/sys.txt -> the final file); the middle link is in no ``dependents`` key.

When the middle link is retargeted (``ln -sfn``; VS Code's watcher coalesces the unlink and
the new link into one *Changed* event) the watcher reports ws/mid/sys.txt. ``_readers``
finds no reader by that name, resolves it with ``os.path.realpath`` to the NEW target,
which nobody read either, and re-checks nothing: the pipeline keeps the count of the old
target (or, when the new target lies outside the workspace, a stale all-clear where a fresh
index shows BL041).

Right answer: after the event, the index's report equals a fresh WorkspaceIndex's (the
readers of the link's OLD real path, i.e. every pipeline reading through the changed link,
must be re-checked). Found by a review (review27b); failed before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from budgetlens_lsp.workspace_index import IndexMode, Snapshot, norm
from tests.core.contract.helpers import make_workspace
from tests.server.links.helpers import CONFIG, LONGER, fresh, pipeline_text, tokens


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


def _chain(tmp_path: Path) -> tuple[Path, str, Path]:
    ws = make_workspace(tmp_path / "ws", config=CONFIG,
                        pipelines={"p.yaml": pipeline_text("sys")})
    (ws / "prompts").mkdir(exist_ok=True)
    (ws / "mid").mkdir()
    (ws / "kept").mkdir()
    (ws / "kept" / "a.txt").write_text("hello prompt\n", "utf-8")
    (ws / "kept" / "b.txt").write_text(LONGER, "utf-8")
    os.symlink(ws / "kept" / "a.txt", ws / "mid" / "sys.txt")
    os.symlink(ws / "mid" / "sys.txt", ws / "prompts" / "sys.txt")
    return ws, norm(ws / "pipelines" / "p.yaml"), ws / "mid" / "sys.txt"


def _retarget(link: Path, target: Path) -> None:
    link.unlink()
    os.symlink(target, link)


def test_middle_link_of_a_chain_retargeted_inside_the_workspace(tmp_path: Path) -> None:
    ws, pipeline, mid = _chain(tmp_path)
    snap = Snapshot(roots=(norm(ws),))
    index = fresh(snap)
    before = tokens(index, pipeline)
    _retarget(mid, ws / "kept" / "b.txt")
    index.update(snap, frozenset([norm(mid)]), IndexMode.INCREMENTAL)
    expected = tokens(fresh(snap), pipeline)
    assert expected > before
    assert tokens(index, pipeline) == expected


def test_middle_link_of_a_chain_retargeted_outside_the_workspace(tmp_path: Path) -> None:
    ws, pipeline, mid = _chain(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text(LONGER, "utf-8")
    snap = Snapshot(roots=(norm(ws),))
    index = fresh(snap)
    assert not index.reports[pipeline].diagnostics
    _retarget(mid, outside)
    index.update(snap, frozenset([norm(mid)]), IndexMode.INCREMENTAL)
    want = sorted(d.code for d in fresh(snap).reports[pipeline].diagnostics)
    assert want  # a fresh index refuses the prompt outside the workspace
    assert sorted(d.code for d in index.reports[pipeline].diagnostics) == want
