"""The core never imports the language-server stack and never touches the network."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "shared_core" / "budgetlens"
FORBIDDEN = ("pygls", "lsprotocol", "socket", "urllib", "http", "requests", "httpx", "asyncio")


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_core_module_imports_lsp_or_network_libraries() -> None:
    offenders = []
    files = sorted(CORE.rglob("*.py"))
    assert len(files) >= 3
    for path in files:
        for name in _imported_modules(path):
            if name.split(".")[0] in FORBIDDEN:
                offenders.append(f"{path.relative_to(CORE)} imports {name}")
    assert offenders == []


def test_importing_every_core_module_and_counting_opens_no_socket() -> None:
    # A fresh interpreter where any socket creation raises; import every core module, count
    # tokens with both shipped encodings, and prove pygls/lsprotocol never got loaded.
    code = r"""
import importlib, pkgutil, socket, sys
def refuse(*a, **k):
    raise RuntimeError("network access attempted")
socket.socket = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
import budgetlens
for mod in pkgutil.walk_packages(budgetlens.__path__, "budgetlens."):
    importlib.import_module(mod.name)
from budgetlens.tokens.core import get_tokenizer
assert get_tokenizer("cl100k_base").encode("hello world") == [15339, 1917]
assert get_tokenizer("o200k_base").encode("hello world") == [24912, 2375]
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("pygls", "lsprotocol"))
print("LOADED:" + ",".join(bad))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "LOADED:\n" in out.stdout
