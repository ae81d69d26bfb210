"""Every folder of frozen reference copies under tests/ says what it guards and when it may go.

A frozen copy (old code kept as an oracle, a golden file, a vendored schema or corpus, a
recorded client) must not be edited to make a test pass, and nobody can tell when it may be
deleted unless its folder says so. ``FROZEN`` lists the folders and their frozen files; each
folder's ``README.md`` names every one of them under the headings ``What it guards`` and
``When it may go``. The list cannot go stale in silence: a helper module whose docstring says
it is frozen, and any file in a ``golden`` or ``legacy`` folder or named ``golden_*``, must
be listed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
HEADINGS = ("## What it guards", "## When it may go")
#: Folder (from the repository root) -> its frozen files and folders.
FROZEN: Mapping[str, tuple[str, ...]] = {
    "tests/core/continuation": ("golden_renderings.json", "legacy/"),
    "tests/core/continuation/legacy": ("legacy_cut.py", "legacy_render.py",
                                       "legacy_contexts.py"),
    "tests/core/yamldoc": ("reference_reader.py",),
    "tests/core/contract": ("reference_models.py",),
    "tests/cli/golden": ("check_github.txt", "check_gitlab.json", "check_junit.xml",
                         "diff.md"),
    "tests/cli/schemas": ("sarif-schema-2.1.0.json", "gitlab-code-quality-minimal.json"),
    "tests/e2e/clients": ("vscode-1.100.3.json", "neovim-0.7.2.json", "neovim-0.11.4.json"),
    "tests/fixtures/prompt_files": ("github_models/", "prompty/", "dotprompt/"),
}
FROZEN_FOLDER_NAMES = ("golden", "legacy")
NOT_FROZEN = ("README.md", "__init__.py")


def readme_problems(folder: Path, items: tuple[str, ...]) -> list[str]:
    """What the README of ``folder`` lacks: the file, a heading, the name of a frozen item;
    and a listed item that does not exist."""
    problems = [f"{folder.name}/{item} does not exist" for item in items
                if not (folder / item.rstrip("/")).exists()]
    readme = folder / "README.md"
    if not readme.is_file():
        return [*problems, f"{folder.name}/ has no README.md"]
    text = readme.read_text("utf-8")
    problems += [f"{folder.name}/README.md has no '{h}'" for h in HEADINGS
                 if not re.search(rf"^{re.escape(h)}\s*$", text, re.MULTILINE)]
    problems += [f"{folder.name}/README.md does not name `{item}`" for item in items
                 if f"`{item}`" not in text]
    return problems


def _says_frozen(path: Path) -> bool:
    doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
    return re.search(r"\bfrozen\b", doc, re.IGNORECASE) is not None


def frozen_files(tests: Path) -> Iterator[tuple[str, str]]:
    """``(folder, name)`` of each frozen-looking file under ``tests`` (folder from its
    parent): a helper module whose docstring says frozen, or a file in a frozen folder or
    named ``golden_*``."""
    for path in sorted(tests.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.name in NOT_FROZEN:
            continue
        by_place = path.parent.name in FROZEN_FOLDER_NAMES or path.name.startswith("golden_")
        helper = path.suffix == ".py" and not path.name.startswith("test_")
        if by_place or (helper and _says_frozen(path)):
            yield path.parent.relative_to(tests.parent).as_posix(), path.name


def unlisted(tests: Path, listed: Mapping[str, tuple[str, ...]]) -> list[str]:
    return [f"{folder}/{name} looks frozen but is not in FROZEN"
            for folder, name in frozen_files(tests) if name not in listed.get(folder, ())]


# ------------------------------------------------------------------ the rules, on a bad tree
def _tree(tmp_path: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    return tmp_path


GOOD_README = "# X\n\n`old.py`\n\n## What it guards\n\nA.\n\n## When it may go\n\nB.\n"


def test_a_missing_or_incomplete_readme_is_found(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"a/old.py": "", "a/README.md": GOOD_README,
                            "b/old.py": "",
                            "c/old.py": "", "c/new.py": "",
                            "c/README.md": "# X\n\n`old.py`\n\n## What it guards\n"})
    assert readme_problems(root / "a", ("old.py",)) == []
    assert readme_problems(root / "b", ("old.py",)) == ["b/ has no README.md"]
    assert readme_problems(root / "c", ("old.py", "new.py", "gone.py")) == [
        "c/gone.py does not exist",
        "c/README.md has no '## When it may go'",
        "c/README.md does not name `new.py`",
        "c/README.md does not name `gone.py`"]


def test_a_frozen_file_missing_from_the_list_is_found(tmp_path: Path) -> None:
    tests = _tree(tmp_path / "tests", {
        "x/reference.py": '"""The old reader, frozen as the reference."""\n',
        "x/helpers.py": '"""Helpers."""\n',
        "x/test_frozen.py": '"""Frozen dataclasses are compared."""\n',
        "y/golden/out.txt": "", "y/golden/README.md": "",
        "z/golden_hashes.json": "{}",
        "w/legacy/__init__.py": "", "w/legacy/old.py": ""})
    assert unlisted(tests, {}) == [
        "tests/w/legacy/old.py looks frozen but is not in FROZEN",
        "tests/x/reference.py looks frozen but is not in FROZEN",
        "tests/y/golden/out.txt looks frozen but is not in FROZEN",
        "tests/z/golden_hashes.json looks frozen but is not in FROZEN"]
    assert unlisted(tests, {"tests/x": ("reference.py",), "tests/y/golden": ("out.txt",),
                            "tests/z": ("golden_hashes.json",),
                            "tests/w/legacy": ("old.py",)}) == []


# ------------------------------------------------------------------ the folders of tests/
@pytest.mark.parametrize("folder", sorted(FROZEN))
def test_each_frozen_folder_has_a_readme_naming_its_copies(folder: str) -> None:
    assert readme_problems(ROOT / folder, FROZEN[folder]) == []


def test_every_frozen_looking_file_is_listed() -> None:
    assert unlisted(TESTS, FROZEN) == []
