"""A workspace folder of ``/`` (issue 30, case 12).

The config.json search stops at the workspace root; its "is this folder inside the root"
test added a separator to the root, and ``/`` became ``//``: no folder was inside, so the
search stopped at the pipeline's own folder and the pipeline got BL010 (no config.json)
instead of its real diagnostics. The workspace here is a copy of examples/, checked with the
root ``/``; long_report.yaml is over budget there (BL050).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from budgetlens.contract.config import find_config
from budgetlens.files import DiskFiles

from .helpers import check, codes_of

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_config_search_from_root_slash_finds_the_config_above(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    start = str(tmp_path / "ws" / "pipelines")
    loaded, probed = find_config(start, DiskFiles(), stop_at="/")
    assert loaded is not None
    assert loaded.path == str(tmp_path / "ws" / "config.json")
    assert probed == [str(tmp_path / "ws" / "pipelines" / "config.json"),
                      str(tmp_path / "ws" / "config.json")]


def test_config_search_from_root_slash_stops_at_slash(tmp_path: Path) -> None:
    start = tmp_path / "a" / "b"
    start.mkdir(parents=True)
    loaded, probed = find_config(str(start), DiskFiles(), stop_at="/")
    assert loaded is None or not loaded.path.startswith(str(tmp_path))
    assert probed[-1] == "/config.json" or loaded is not None
    assert probed[:3] == [str(start / "config.json"), str(tmp_path / "a" / "config.json"),
                          str(tmp_path / "config.json")]


def test_check_with_workspace_root_slash_reports_the_budget(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    report = check(tmp_path / "ws" / "pipelines" / "long_report.yaml", workspace_root="/")
    assert "BL010" not in codes_of(report)
    assert "BL050" in codes_of(report)
    assert report.config == str(tmp_path / "ws" / "config.json")
