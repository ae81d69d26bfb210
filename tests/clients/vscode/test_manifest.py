"""The VS Code extension's manifest agrees with the server.

``contributes.configuration`` must mirror every server setting (same names, same defaults) so
what a user sets in VS Code is what the server reads; the extension's own commands must not
reuse a server command id (vscode-languageclient registers those itself, and a second
registration of the same id fails).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from budgetlens.serialize import to_jsonable
from budgetlens_lsp.features import commands
from budgetlens_lsp.settings import Settings

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = ROOT / "editor-clients" / "vscode" / "package.json"
CLIENT_ONLY = ("budgetlens.server.", "budgetlens.trace.")


def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return data


def _flatten(prefix: str, value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flatten(f"{prefix}.{key}", inner))
        return out
    return {prefix: value}


def test_every_server_setting_is_contributed_with_the_servers_default() -> None:
    server = _flatten("budgetlens", to_jsonable(Settings()))
    props = _manifest()["contributes"]["configuration"]["properties"]
    contributed = {k: v for k, v in props.items() if not k.startswith(CLIENT_ONLY)}
    assert sorted(contributed) == sorted(server)
    for key, default in server.items():
        assert contributed[key]["default"] == default, key
        assert contributed[key].get("markdownDescription") or contributed[key].get("description")


def test_client_only_settings_are_the_server_resolution_and_trace() -> None:
    props = _manifest()["contributes"]["configuration"]["properties"]
    client_only = sorted(k for k in props if k.startswith(CLIENT_ONLY))
    assert client_only == ["budgetlens.server.command", "budgetlens.server.interpreter",
                           "budgetlens.trace.server"]


def test_client_commands_do_not_reuse_server_command_ids() -> None:
    contributed = {c["command"] for c in _manifest()["contributes"]["commands"]}
    assert contributed == {
        "budgetlens.client.showHierarchyContext", "budgetlens.client.clampAll",
        "budgetlens.client.showBudgetReport", "budgetlens.client.restartServer"}
    assert not contributed & set(commands.ALL)
