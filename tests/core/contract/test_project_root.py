"""``discovery.project_root``: the root a pipeline is checked under whatever folder a
client chose, the same config.json ``budgetlens check`` finds."""

from __future__ import annotations

from pathlib import Path

from budgetlens.contract.discovery import project_root


def _tree(root: Path, *files: str) -> None:
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}", "utf-8")


def test_a_config_inside_the_workspace_keeps_the_workspace_root(tmp_path: Path) -> None:
    _tree(tmp_path, "config.json", "ws/config.json", "ws/pipelines/p.yaml")
    ws = str(tmp_path / "ws")
    assert project_root(str(tmp_path / "ws/pipelines/p.yaml"), ws) == ws


def test_a_config_above_the_workspace_folder_becomes_the_root(tmp_path: Path) -> None:
    _tree(tmp_path, "project/config.json", "project/pipelines/p.yaml")
    pipelines = str(tmp_path / "project/pipelines")
    assert project_root(pipelines + "/p.yaml", pipelines) == str(tmp_path / "project")


def test_no_config_anywhere_keeps_the_workspace_root(tmp_path: Path) -> None:
    _tree(tmp_path, "ws/pipelines/p.yaml")
    ws = str(tmp_path / "ws")
    assert project_root(ws + "/pipelines/p.yaml", ws,
                        exists=lambda p: p.startswith(str(tmp_path)) and Path(p).is_file()
                        ) == ws
    assert project_root(ws + "/pipelines/p.yaml", None) is None
