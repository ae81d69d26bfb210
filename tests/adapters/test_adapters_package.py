"""The adapters' package: a missing library is a clear ImportError naming the extra; the
package uses the core's public API only, and the core never imports it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "server" / "budgetlens_adapters"


@pytest.mark.parametrize(("module", "hidden", "extra"), [
    ("openai_sdk", ["openai"], "openai"),
    ("litellm_proxy", ["litellm", "litellm.integrations", "litellm.integrations.custom_logger"],
     "litellm"),
    ("langchain_agent", ["langchain", "langchain.agents", "langchain.agents.middleware"],
     "langchain"),
])
def test_a_missing_library_names_the_extra(module: str, hidden: list[str], extra: str) -> None:
    code = (f"import sys\nfor name in {hidden!r}:\n    sys.modules[name] = None\n"
            f"from budgetlens_adapters import {module}\n"
            f"getattr({module}, 'guard', lambda c: None)(object())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 1
    assert "ImportError" in out.stderr
    assert f"pip install 'budgetlens[{extra}]'" in out.stderr


def test_the_adapters_import_the_core_by_its_public_api_only() -> None:
    imported = set()
    for path in ADAPTERS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    ours = {m for m in imported if m.split(".")[0].startswith("budgetlens")}
    assert ours == {"budgetlens", "budgetlens_adapters.fitting"}


def test_the_core_never_imports_the_adapters() -> None:
    core = ROOT / "shared_core" / "budgetlens"
    offenders = [str(p) for p in core.rglob("*.py")
                 if "budgetlens_adapters" in p.read_text("utf-8")]
    assert offenders == []
