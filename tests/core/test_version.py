"""``budgetlens.__version__`` without ``_version.txt``: the installed distribution's metadata,
else ``0+unknown``.

setuptools-scm writes ``_version.txt`` at build time. An install that did not write it (a
copy of the sources over an installed distribution), or wrote it empty, still reports the
installed version. A bare copy with no distribution installed reports ``0+unknown``.

Each case is a real interpreter importing a copy of the package's ``__init__.py`` from a
temporary folder (``import budgetlens`` loads no other module of the package). The expected
version is what ``importlib.metadata`` finds installed, asked from the same folder.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INIT = ROOT / "shared_core" / "budgetlens" / "__init__.py"
PRINT_VERSION = ("import sys; sys.path.insert(0, sys.argv[1]); import budgetlens;"
                 " print(budgetlens.__version__, budgetlens.__file__)")


def _installed_version(cwd: Path) -> str:
    """The version the standard library finds installed, from the same folder."""
    return subprocess.run(
        [sys.executable, "-c",
         "from importlib.metadata import version; print(version('budgetlens'))"],
        cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def _copy(tmp_path: Path, version_text: str | None) -> Path:
    package = tmp_path / "budgetlens"
    package.mkdir()
    shutil.copy(INIT, package / "__init__.py")
    if version_text is not None:
        (package / "_version.txt").write_text(version_text, "utf-8")
    return tmp_path


def _version(folder: Path, *flags: str) -> str:
    # run from the copy's folder: the sources' own egg-info is not on the path
    out = subprocess.run([sys.executable, *flags, "-c", PRINT_VERSION, str(folder)],
                         cwd=folder, capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == str(folder / "budgetlens" / "__init__.py")  # the copy was imported
    return out[0]


def test_the_file_is_read_when_it_is_there(tmp_path: Path) -> None:
    assert _version(_copy(tmp_path, "7.8.9\n")) == "7.8.9"


@pytest.mark.parametrize("version_text", [None, "", "\n"], ids=["missing", "empty", "blank"])
def test_without_the_file_the_installed_metadata_answers(tmp_path: Path,
                                                         version_text: str | None) -> None:
    folder = _copy(tmp_path, version_text)
    expected = _installed_version(folder)
    assert expected and expected != "0+unknown"
    assert _version(folder) == expected


def test_without_the_file_or_a_distribution_the_version_is_unknown(tmp_path: Path) -> None:
    # -S: no site-packages, so no installed distribution is found
    assert _version(_copy(tmp_path, None), "-S") == "0+unknown"
