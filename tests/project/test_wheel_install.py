"""The package as users install it: a built wheel, installed NON-editable into a fresh venv.

Every other test imports budgetlens from the checkout (``pip install -e .``), where every data
file is present whether or not the wheel would carry it. This module builds the wheel with
``pip wheel`` from a copy of the sources (so no ``build/`` or ``*.egg-info`` is left in the
checkout), installs it with plain ``pip install <wheel>`` (dependencies resolved as usual) into
a new virtualenv in a temporary folder, and then, from that venv only:

- compares the data files inside the installed packages with the ones in the source tree;
- runs ``budgetlens check`` on a copy of ``examples/`` (the documented first command);
- runs ``budgetlens pack`` (the built-in intent map) and ``budgetlens tokens``;
- speaks LSP to ``budgetlens serve`` over stdio: initialize, initialized, didOpen of the
  over-budget pipeline, and the first diagnostics published for it must hold BL050.

Any file the wheel forgets fails one of these (a missing ``encodings/encodings.json`` makes
every token count raise ``FileNotFoundError``).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import make_test_lsp_client

from tests.e2e.harness import stop_client
from tests.waiting import HANG_GUARD

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {"budgetlens": REPO / "shared_core" / "budgetlens",
            "budgetlens_lsp": REPO / "server" / "budgetlens_lsp"}
TIMEOUT = HANG_GUARD  # a hang guard only
FIRST_ERROR = ("examples/pipelines/long_report.yaml:15:9: error[BL050] step 'write_report'"
               " does not fit the context window")


class Installed:
    def __init__(self, venv: Path, work: Path) -> None:
        self.venv = venv
        self.work = work  # a folder outside the checkout, holding a copy of examples/
        self.bin = venv / "bin"
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
                                 "PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT")}
        self.env["PATH"] = f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"
        self.env["PYTHONNOUSERSITE"] = "1"

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.bin / argv[0]), *argv[1:]], cwd=self.work,
                              env=self.env, capture_output=True, text=True, timeout=TIMEOUT)


def _data_files(root: Path) -> set[str]:
    """Every file of a package folder that is not Python source, a cache or hidden."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc")
            and "__pycache__" not in p.parts
            and not any(part.startswith(".") for part in p.relative_to(root).parts)}


def _pip(python: Path | str, *args: str, cwd: Path | None = None) -> None:
    done = subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"pip {args[0]} failed:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for name in ("shared_core", "server"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    dist = tmp / "dist"
    _pip(sys.executable, "wheel", "-q", "--no-deps", "-w", str(dist), ".", cwd=src)
    [wheel] = dist.glob("budgetlens-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    _pip(venv / "bin" / "python", "install", "-q", str(wheel))
    work = tmp / "work"
    shutil.copytree(REPO / "examples", work / "examples")
    yield Installed(venv, work)


def test_the_venv_imports_the_installed_wheel_not_the_checkout(installed: Installed) -> None:
    done = installed.run("python", "-c",
                         "import budgetlens, budgetlens_lsp; print(budgetlens.__file__);"
                         " print(budgetlens_lsp.__file__)")
    assert done.returncode == 0, done.stderr
    for line in done.stdout.splitlines():
        path = Path(line)
        assert "site-packages" in path.parts and installed.venv in path.parents, line
        assert REPO not in path.parents, line


def test_every_data_file_of_the_sources_is_installed(installed: Installed) -> None:
    done = installed.run("python", "-c",
                         "import budgetlens, budgetlens_lsp, os;"
                         " print(os.path.dirname(budgetlens.__file__));"
                         " print(os.path.dirname(budgetlens_lsp.__file__))")
    assert done.returncode == 0, done.stderr
    core, server = (Path(p) for p in done.stdout.splitlines())
    for name, site in (("budgetlens", core), ("budgetlens_lsp", server)):
        expected = _data_files(PACKAGES[name])
        assert expected, name  # the test would prove nothing without data files
        missing = expected - _data_files(site)
        assert not missing, f"the wheel lacks {sorted(missing)} of package {name}"


def test_check_of_the_examples_from_the_installed_script(installed: Installed) -> None:
    done = installed.run("budgetlens", "check", "examples")
    assert done.stderr == ""
    assert done.returncode == 1, done.stdout
    lines = done.stdout.splitlines()
    assert any(line.startswith(FIRST_ERROR) for line in lines), done.stdout
    assert "1 not fitting" in lines[-1], lines[-1]


def test_tokens_and_pack_from_the_installed_script(installed: Installed) -> None:
    tokens = installed.run("budgetlens", "tokens", "--tokenizer", "o200k_base",
                           "examples/prompts/router.txt")
    assert tokens.returncode == 0, tokens.stderr
    pack = installed.run("budgetlens", "pack", "examples/packing/docs.json",
                         "--intent", "general", "--format", "json")
    assert pack.returncode == 0, pack.stderr
    assert isinstance(json.loads(pack.stdout), dict)


async def test_serve_publishes_bl050_for_the_over_budget_pipeline(
        installed: Installed) -> None:
    root = installed.work / "examples"
    pipeline = root / "pipelines" / "long_report.yaml"
    uri = pipeline.as_uri()
    client = make_test_lsp_client()
    await client.start_io(str(installed.bin / "budgetlens"), "serve", cwd=installed.work,
                          env=installed.env)
    try:
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="examples")])),
            TIMEOUT)
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="yaml", version=1,
                                                 text=pipeline.read_text("utf-8"))))
        while uri not in client.diagnostics:  # the first publication for the pipeline
            await asyncio.wait_for(client.wait_for_notification(
                types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), TIMEOUT)
        diagnostics = list(client.diagnostics[uri])
        assert [str(d.code) for d in diagnostics] == ["BL050"], diagnostics
        [d] = diagnostics
        assert d.severity == types.DiagnosticSeverity.Error
        assert (d.range.start.line, d.range.start.character) == (14, 8)
        assert d.message.startswith("step 'write_report' does not fit the context window")
        assert client.messages == []
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    finally:
        await stop_client(client)
