"""Command views (features/views.py): the per-user folder, the files' text, read-only and
rewritten in place."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from budgetlens_lsp.features.views import hierarchy_view, report_view, views_dir, write_view


def test_the_views_folder_follows_each_platform_convention(tmp_path: Path) -> None:
    home = os.path.expanduser("~")
    assert views_dir({"XDG_CACHE_HOME": "/c"}, "linux") == Path("/c/budgetlens/views")
    assert views_dir({}, "linux") == Path(home, ".cache", "budgetlens", "views")
    # a relative XDG_CACHE_HOME is invalid by the XDG spec: the default is used
    assert views_dir({"XDG_CACHE_HOME": "rel"}, "linux") == Path(home, ".cache", "budgetlens",
                                                                 "views")
    assert views_dir({}, "darwin") == Path(home, "Library", "Caches", "budgetlens", "views")
    assert views_dir({"LOCALAPPDATA": "C:/Users/u/AppData/Local"}, "win32") == Path(
        "C:/Users/u/AppData/Local", "budgetlens", "views")


def test_a_hierarchy_view_names_the_cut_and_shows_the_marked_text() -> None:
    result = {"text": '{"a": "xy<<<CUT>>>', "budget": 1000, "marker": "<<<CUT>>>",
              "description": "cut inside a string at a", "error": None,
              "cut": {"line": 0, "character": 8, "path": "a", "kind": "string", "offset": 8}}
    view = hierarchy_view("/ws/responses/r.json", result)
    lines = view.text.split("\n")
    assert lines[0] == "budgetlens: hierarchy context of r.json (/ws/responses/r.json)"
    assert lines[2] == ("cut: cut inside a string at a (line 1, character 9); the cut is"
                        " marked <<<CUT>>>")
    assert lines[4] == '{"a": "xy<<<CUT>>>' and view.suffix == ".txt"
    complete = hierarchy_view("/ws/r.json", {**result, "cut": None})
    assert "the JSON is complete: nothing was cut" in complete.text


def test_views_are_read_only_and_rewritten_in_place(tmp_path: Path) -> None:
    view = report_view("/ws/pipelines/long report.yaml", {"text": "table v1\n"})
    path = write_view(view, tmp_path / "views")
    assert path.parent == tmp_path / "views"
    assert path.name.startswith("report-long_report-") and path.suffix == ".md"
    assert path.read_text("utf-8") == ("# budgetlens budget report: long report.yaml\n\n"
                                       "`/ws/pipelines/long report.yaml`\n\n"
                                       "```text\ntable v1\n```\n")
    assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    again = write_view(report_view("/ws/pipelines/long report.yaml", {"text": "table v2"}),
                       tmp_path / "views")
    assert again == path and "table v2" in path.read_text("utf-8")
    other = write_view(report_view("/other/pipelines/long report.yaml", {"text": "x"}),
                       tmp_path / "views")
    assert other != path  # same name, another folder: another file
    assert sorted(p.name for p in (tmp_path / "views").iterdir()) == sorted(
        [path.name, other.name])  # no temporary file left behind
