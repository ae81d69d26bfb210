"""The package as users install it: the built wheel, and the built sdist, each installed
NON-editable into a fresh venv.

Every other test imports budgetlens from the checkout (``pip install -e .``), where every data
file is present whether or not the wheel would carry it. This module copies the sources into a
temporary git repository tagged ``v9.8.7`` (so no ``build/`` or ``*.egg-info`` is left in the
checkout, and the version must come from the tag), builds the sdist and the wheel with
``python -m build`` (the wheel from the sdist, as PyPI users get it), checks both with
``twine check --strict``, and installs each with plain ``pip install`` (dependencies resolved
as usual) into a new virtualenv in a temporary folder. Then, from each venv only:

- compares the data files inside the installed packages with the ones in the source tree;
- runs ``budgetlens check`` on a copy of ``examples/`` (the documented first command);
- runs ``budgetlens pack`` (the built-in intent map) and ``budgetlens tokens``;
- speaks LSP to ``budgetlens serve`` over stdio: initialize, initialized, didOpen of the
  over-budget pipeline, and the first diagnostics published for it must hold BL050;
- ``budgetlens --version`` and ``budgetlens.__version__`` say ``9.8.7``, the tag.

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
import tarfile
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
TAG_VERSION = "9.8.7"  # the tag of the temporary repository the dists are built in
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


def _run(*argv: str | Path, cwd: Path) -> str:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"{argv[:3]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


class Dists:
    def __init__(self, sdist: Path, wheel: Path) -> None:
        self.sdist = sdist
        self.wheel = wheel


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist and the wheel, built by ``python -m build`` in a git repository tagged
    ``v9.8.7`` that holds a copy of the sources (the checkout itself is left untouched)."""
    tmp = tmp_path_factory.mktemp("dists")
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist",
                                    "_version.txt")
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in"):
        shutil.copy2(REPO / name, src / name)
    for name in ("shared_core", "server"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    git = ("git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
           "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false")
    _run(*git, "init", "-q", cwd=src)
    _run(*git, "add", "-A", cwd=src)
    _run(*git, "commit", "-q", "-m", "release", cwd=src)
    _run(*git, "tag", "-a", f"v{TAG_VERSION}", "-m", "release", cwd=src)
    dist = tmp / "dist"
    _run(sys.executable, "-m", "build", "--outdir", dist, ".", cwd=src)
    [sdist] = dist.glob("budgetlens-*.tar.gz")
    [wheel] = dist.glob("budgetlens-*.whl")
    return Dists(sdist, wheel)


@pytest.fixture(scope="module", params=["wheel", "sdist"])
def installed(request: pytest.FixtureRequest, dists: Dists,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    tmp = tmp_path_factory.mktemp(request.param)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    _pip(venv / "bin" / "python", "install", "-q",
         str(dists.wheel if request.param == "wheel" else dists.sdist))
    work = tmp / "work"
    shutil.copytree(REPO / "examples", work / "examples")
    yield Installed(venv, work)


def test_the_dists_are_named_after_the_tag_and_pass_twine_check(dists: Dists) -> None:
    assert dists.sdist.name == f"budgetlens-{TAG_VERSION}.tar.gz"
    assert dists.wheel.name == f"budgetlens-{TAG_VERSION}-py3-none-any.whl"
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                           str(dists.sdist), str(dists.wheel)],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_sdist_carries_every_data_file_and_the_license(dists: Dists) -> None:
    top = f"budgetlens-{TAG_VERSION}"
    with tarfile.open(dists.sdist) as sdist:
        names = set(sdist.getnames())
    for name, folder in PACKAGES.items():
        inside = folder.relative_to(REPO).as_posix()
        expected = _data_files(folder) - {"_version.txt"}
        missing = {f for f in expected if f"{top}/{inside}/{f}" not in names}
        assert not missing, f"the sdist lacks {sorted(missing)} of package {name}"
    for name in ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "PKG-INFO",
                 "shared_core/budgetlens/_version.txt"):
        assert f"{top}/{name}" in names, name


def test_the_version_is_the_git_tag(installed: Installed) -> None:
    done = installed.run("budgetlens", "--version")
    assert (done.returncode, done.stdout) == (0, f"budgetlens {TAG_VERSION}\n"), done.stderr
    done = installed.run("python", "-c", "import budgetlens; print(budgetlens.__version__)")
    assert done.stdout == f"{TAG_VERSION}\n", done.stderr


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
