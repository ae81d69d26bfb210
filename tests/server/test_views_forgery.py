"""The server's generated views (features/views.py) in the per-user cache: a link planted
there (the views folder, or a view's own name) is never written through, and a planted view
is replaced by the server's own text (issue 30, "What must hold" 2)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from budgetlens_lsp.features.views import report_view, write_view
from tests.cli.test_cache_forgery import snapshot

SOURCE = "/ws/pipelines/p.yaml"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "precious.txt").write_text("precious\n", "utf-8")
    (tmp_path / "outside" / "precious.txt").chmod(0o644)
    return tmp_path


def _view_name(site: Path) -> str:
    """The name the server gives the report view of SOURCE (written once in a scratch
    folder: what anyone running the package can learn)."""
    return write_view(report_view(SOURCE, {"text": "x"}), site / "scratch").name


def test_a_views_folder_planted_as_a_link_is_not_written_through(
        site: Path, caplog: pytest.LogCaptureFixture) -> None:
    views = site / "xdg" / "budgetlens" / "views"
    views.parent.mkdir(parents=True)
    os.symlink(site / "outside", views)
    before = snapshot(site / "outside", ())
    with caplog.at_level(logging.WARNING), pytest.raises(OSError, match="not a private"):
        write_view(report_view(SOURCE, {"text": "table"}))
    assert snapshot(site / "outside", ()) == before
    assert any("is not a folder of yours" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("planted", ["a link to a file outside", "a forged view"])
def test_a_planted_view_is_replaced_and_nothing_outside_changes(
        site: Path, planted: str) -> None:
    views = site / "xdg" / "budgetlens" / "views"
    views.mkdir(parents=True, mode=0o700)
    target = views / _view_name(site)
    if planted == "a link to a file outside":
        os.symlink(site / "outside" / "precious.txt", target)
    else:
        target.write_text("# budgetlens budget report: p.yaml\n\nall steps fit\n", "utf-8")
        target.chmod(0o444)
    before = snapshot(site / "outside", ())
    path = write_view(report_view(SOURCE, {"text": "step s: 2260 > 2000 (NO)"}))
    assert path == target
    assert snapshot(site / "outside", ()) == before  # not written, not chmod'ed
    st = os.lstat(path)
    assert stat.S_ISREG(st.st_mode) and not st.st_mode & stat.S_IWUSR
    assert "2260 > 2000 (NO)" in path.read_text("utf-8")
    assert "all steps fit" not in path.read_text("utf-8")
