"""``find_pipelines`` finds the files a config.json's ``prompt_mappings`` globs name."""

from __future__ import annotations

import json
from pathlib import Path

from budgetlens.contract.discovery import find_pipelines

ENTRY = {"glob": "agents/*.yaml", "model": "model.name", "output": "model.max_tokens"}


def _touch(path: Path, text: str = "model: {name: gpt-4o-mini}\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


def test_mapped_files_are_found_below_their_config_only(tmp_path: Path) -> None:
    sub = tmp_path / "svc"
    _touch(sub / "config.json", json.dumps({"prompt_mappings": [ENTRY]}))
    _touch(sub / "agents" / "a.yaml")
    _touch(sub / "agents" / "notes.md", "not yaml")
    _touch(sub / "other" / "agents" / "x.yaml")  # the glob is relative to svc/
    _touch(tmp_path / "agents" / "b.yaml")  # above the config.json: not mapped
    found = find_pipelines(tmp_path)
    assert found == [sub / "agents" / "a.yaml"]


def test_hidden_folders_and_escapes_are_not_searched(tmp_path: Path) -> None:
    _touch(tmp_path / "config.json", json.dumps({"prompt_mappings": [
        dict(ENTRY, glob="**/*.yaml"), dict(ENTRY, glob="../*.yaml")]}))
    _touch(tmp_path / ".git" / "x.yaml")
    _touch(tmp_path / "node_modules" / "pkg" / "y.yaml")
    _touch(tmp_path / "deep" / "z.yaml")
    _touch(tmp_path.parent / f"{tmp_path.name}-outside.yaml")
    assert find_pipelines(tmp_path) == [tmp_path / "deep" / "z.yaml"]


def test_an_entry_without_output_and_a_broken_config_find_nothing(tmp_path: Path) -> None:
    _touch(tmp_path / "a" / "config.json", json.dumps({"prompt_mappings": [
        {"glob": "agents/*.yaml", "model": "model.name"}]}))
    _touch(tmp_path / "a" / "agents" / "a.yaml")
    _touch(tmp_path / "b" / "config.json", '{"prompt_mappings": [')
    _touch(tmp_path / "b" / "agents" / "b.yaml")
    assert find_pipelines(tmp_path) == []
