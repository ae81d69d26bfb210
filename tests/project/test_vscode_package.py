"""The VS Code extension as Open VSX and the Marketplace receive it: the .vsix that
``vsce package`` makes (the extension's own ``node_modules``, installed by
``editor-clients/vscode/scripts/test.sh``, the stage before pytest), its manifest fields, its
licence and icon, and its README's links."""

from __future__ import annotations

import importlib.util
import json
import re
import struct
import subprocess
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.waiting import HANG_GUARD

REPO = Path(__file__).resolve().parents[2]
EXT = REPO / "editor-clients" / "vscode"
REPOSITORY = "https://github.com/budgetlens/budgetlens"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_vsix = _script("check_vsix")


@pytest.fixture(scope="module")
def vsix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vsce = EXT / "node_modules" / ".bin" / "vsce"
    assert vsce.exists(), ("the extension's node modules are missing: run"
                           " editor-clients/vscode/scripts/test.sh (npm ci) first")
    out = tmp_path_factory.mktemp("vsix") / "budgetlens.vsix"
    for argv in (["npm", "run", "--silent", "build"],
                 [str(vsce), "package", "--no-dependencies", "-o", str(out)]):
        done = subprocess.run(argv, cwd=EXT, capture_output=True, text=True,
                              timeout=HANG_GUARD)
        assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    return out


def test_the_vsix_carries_the_fields_open_vsx_requires(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        pkg = json.loads(archive.read("extension/package.json"))
        manifest = archive.read("extension.vsixmanifest").decode("utf-8")
        icon = archive.read("extension/images/icon.png")
    assert (pkg["name"], pkg["publisher"], pkg["license"]) == ("budgetlens", "budgetlens", "MIT")
    assert re.fullmatch(r"\d+\.\d+\.\d+", pkg["version"])
    assert pkg["repository"]["url"] == REPOSITORY + ".git"
    assert pkg["engines"]["vscode"] == "^1.100.0"
    assert pkg["icon"] == "images/icon.png"
    assert {"Linters", "Programming Languages"} <= set(pkg["categories"])
    assert pkg["homepage"].startswith(REPOSITORY) and pkg["bugs"]["url"].startswith(REPOSITORY)
    assert "extension/LICENSE.txt" in names
    assert struct.unpack(">II", icon[16:24]) == (128, 128)
    assert f'Id="budgetlens" Version="{pkg["version"]}"' in manifest
    assert 'Publisher="budgetlens"' in manifest
    assert "Microsoft.VisualStudio.Services.Icons.Default" in manifest
    assert f'<Property Id="Microsoft.VisualStudio.Services.Links.Source" Value="{REPOSITORY}' \
        in manifest
    assert check_vsix.problems(str(vsix)) == []


def test_the_checker_names_each_missing_field(vsix: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.vsix"
    with zipfile.ZipFile(vsix) as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            if item.filename in ("extension/LICENSE.txt", "extension/images/icon.png"):
                continue
            data = src.read(item)
            if item.filename == "extension/package.json":
                pkg = json.loads(data)
                for key in ("repository", "license", "categories"):
                    del pkg[key]
                data = json.dumps(pkg).encode()
            dst.writestr(item, data)
    found = check_vsix.problems(str(broken))
    assert found == ["package.json: no license", "package.json: no repository url (https)",
                     "package.json: no categories", f"{broken}: no LICENSE file",
                     f"{broken}: the icon extension/images/icon.png is missing"], found


def test_the_icon_is_a_128_pixel_png_drawn_by_its_script() -> None:
    data = (EXT / "images" / "icon.png").read_bytes()
    assert data == _script("make_icon").png()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (128, 128)
    assert len(data) < 10_000


def test_the_readme_links_to_pages_that_exist_and_are_not_moved_stubs() -> None:
    readme = (EXT / "README.md").read_text("utf-8")
    links = re.findall(re.escape(REPOSITORY) + r"/blob/main/([^)\s]+)", readme)
    assert links, readme
    for link in links:
        page = REPO / link
        assert page.is_file(), link
        assert "Moved to" not in page.read_text("utf-8"), link


def test_the_package_script_needs_no_missing_repository_waiver() -> None:
    pkg = json.loads((EXT / "package.json").read_text("utf-8"))
    assert "--allow-missing-repository" not in pkg["scripts"]["package"]
    assert "python3 scripts/check_vsix.py budgetlens.vsix" in (
        EXT / "scripts" / "test.sh").read_text("utf-8")
