"""``budgetlens clamp`` searches as ``check`` does (issue 35): what ``.gitignore`` and
``.git/info/exclude`` ignore is neither planned nor written, and ``--exclude`` /
``--extend-exclude`` / ``--no-respect-gitignore`` work the same way.

Each workspace is a copy of ``ci_workspace``, whose ``pipelines/small.yaml`` has an
over-budget step (BL050), so a clamp plan changes it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from budgetlens_cli.main import main

CI_WORKSPACE = Path(__file__).resolve().parent / "ci_workspace"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository (a ``.git`` folder, no git run) holding ``ws/a`` and ``ws/b``."""
    root = tmp_path / "repo"
    for name in ("a", "b"):
        shutil.copytree(CI_WORKSPACE, root / "ws" / name)
    (root / ".git" / "info").mkdir(parents=True)
    monkeypatch.chdir(root)
    for name in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT"):
        monkeypatch.delenv(name, raising=False)
    return root


def planned(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """The workspaces whose pipeline ``clamp --diff`` would change."""
    code = main(["clamp", "ws", "--diff", *argv])
    out = capsys.readouterr().out
    assert code == 1, out  # changes pending
    return sorted({line[len("+++ b/"):].split("/pipelines/")[0]
                   for line in out.splitlines() if line.startswith("+++ ")})


def test_clamp_skips_what_gitignore_ignores(repo: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert planned(capsys) == ["ws/a", "ws/b"]
    (repo / ".gitignore").write_text("ws/b/\n", "utf-8")
    assert planned(capsys) == ["ws/a"]
    assert planned(capsys, "--no-respect-gitignore") == ["ws/a", "ws/b"]
    assert planned(capsys, "--no-respect-gitignore", "--extend-exclude", "a") == ["ws/b"]


def test_clamp_skips_what_git_info_exclude_ignores(repo: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".git" / "info" / "exclude").write_text("/ws/a\n", "utf-8")
    assert planned(capsys) == ["ws/b"]
    # the .gitignore of the root is read after it and takes it back
    (repo / ".gitignore").write_text("!/ws/a\n", "utf-8")
    assert planned(capsys) == ["ws/a", "ws/b"]


def test_clamp_write_leaves_an_ignored_pipeline_alone(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".gitignore").write_text("ws/b/\n", "utf-8")
    ignored = repo / "ws" / "b" / "pipelines" / "small.yaml"
    kept = repo / "ws" / "a" / "pipelines" / "small.yaml"
    before = ignored.read_bytes()
    assert main(["clamp", "ws", "--write"]) == 0
    capsys.readouterr()
    assert ignored.read_bytes() == before
    assert kept.read_bytes() != before  # the same file, clamped


def test_check_skips_what_git_info_exclude_ignores(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".git" / "info" / "exclude").write_text("b\n", "utf-8")
    main(["check", "ws", "--no-cache"])
    out = capsys.readouterr().out
    assert "ws/a/pipelines/small.yaml:" in out
    assert "ws/b/" not in out


def test_a_new_info_exclude_is_not_answered_from_the_record(
        repo: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``check``'s recorded answer (``cache.replay``) holds the stat of ``.git/info/exclude``
    (missing at first): writing one is a new search, not the old answer."""
    from budgetlens_cli import cache as result_cache

    settled = 1_600_000_000  # an mtime long before any run: no file is racy
    for path in [repo, *repo.rglob("*")]:
        os.utime(path, (settled, settled), follow_symlinks=False)
    monkeypatch.setattr(result_cache, "RACY_NS", 0)  # written just now, by the test alone
    for name in (result_cache.NO_CACHE_ENV, result_cache.CACHE_DIR_ENV):
        monkeypatch.delenv(name, raising=False)
    outputs = []
    for _ in range(2):
        assert main(["check", "ws", "--no-table"]) == 1
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "ws/b/pipelines" in outputs[0]
    assert len(list(Path(".budgetlens_cache").glob("*/*.answer"))) == 1
    exclude = repo / ".git" / "info" / "exclude"
    exclude.write_text("ws/b/\n", "utf-8")
    os.utime(exclude, (settled + 10, settled + 10))
    assert main(["check", "ws", "--no-table"]) == 1
    out = capsys.readouterr().out
    assert "ws/a/pipelines" in out and "ws/b/pipelines" not in out


def test_a_folder_named_on_purpose_is_searched_though_git_ignores_it(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # ws/b is ignored by the repository, so a search of the repository skips it; named
    # itself (a workspace opened inside an ignored folder), its pipelines are found, and
    # what lies below it is still searched with the defaults
    (repo / ".gitignore").write_text("ws/b/\n", "utf-8")
    assert planned(capsys) == ["ws/a"]
    code = main(["clamp", "ws/b", "--diff"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert [line for line in out.splitlines() if line.startswith("+++ ")] == [
        "+++ b/ws/b/pipelines/small.yaml"]
    code = main(["check", "ws/b", "--no-cache", "--quiet"])
    out = capsys.readouterr().out
    assert "ws/b/pipelines/small.yaml" in out and "BL050" in out, out
