"""The recorded clients the behavioural suites run against (tests/e2e/clients/), loaded as sent.

Where the clients differ in what the server does with them, written out by hand from the files:
VS Code and Neovim 0.11 pull diagnostics for open documents (Neovim 0.7 gets them pushed);
only VS Code sends ``initializationOptions`` (its extension's settings) and versioned
``documentChanges``; Neovim 0.7 has no ``workspace/configuration`` and no ``showDocument``.
"""

from __future__ import annotations

from .harness import RECORDED_CLIENTS, RecordedClient


def _by_name() -> dict[str, RecordedClient]:
    return {c.name: c for c in RECORDED_CLIENTS}


def test_the_three_recorded_clients_are_loaded_with_their_client_info() -> None:
    clients = _by_name()
    assert sorted(clients) == ["neovim-0.11.4", "neovim-0.7.2", "vscode-1.100.3"]
    assert {n: (c.info.name, c.info.version) for n, c in clients.items() if c.info} == {
        "neovim-0.11.4": ("Neovim", "0.11.4+v0.11.4"),
        "neovim-0.7.2": ("Neovim", "0.7.2"),
        "vscode-1.100.3": ("code-server", "1.100.3"),
    }


def test_what_differs_per_client() -> None:
    clients = _by_name()
    assert {n: c.pulls_diagnostics for n, c in clients.items()} == {
        "neovim-0.11.4": True, "neovim-0.7.2": False, "vscode-1.100.3": True}
    vscode = clients["vscode-1.100.3"].initialization_options
    assert isinstance(vscode, dict) and vscode["debounceMs"] == 30
    assert clients["neovim-0.7.2"].initialization_options is None
    assert clients["neovim-0.11.4"].initialization_options is None
    versioned = {n: bool(c.capabilities.workspace and c.capabilities.workspace.workspace_edit
                         and c.capabilities.workspace.workspace_edit.document_changes)
                 for n, c in clients.items()}
    assert versioned == {"neovim-0.11.4": False, "neovim-0.7.2": False, "vscode-1.100.3": True}
    old = clients["neovim-0.7.2"].capabilities
    assert old.workspace is not None and not old.workspace.configuration
    assert old.window is not None and old.window.show_document is not None
    assert old.window.show_document.support is False
