"""The hooks of ``.pre-commit-hooks.yaml`` run by the real ``pre-commit`` (PyPI).

``pre-commit try-repo HOOK_REPO budgetlens-check --all-files`` runs inside a temporary git
repository holding a copy of ``examples/``: pre-commit builds its own virtualenv of budgetlens
from HOOK_REPO (``pip install .``, dependencies from the package index) and runs the hook as a
team's repository would.

HOOK_REPO is a one-commit git snapshot of this checkout's working tree (tracked files plus
untracked ones that are not ignored), not the checkout itself: try-repo on a checkout with
uncommitted changes copies only tracked files, so a new, not yet added file (the hooks file
itself, a new module) would be missing; a snapshot gives the same result in a developer's
worktree and in a fresh CI clone. Both runs share one PRE_COMMIT_HOME (a temporary folder,
never the user's cache) and one snapshot commit, so the virtualenv is built once (about a
minute).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Written by hand from the example (README "What it shows"), not produced by budgetlens.
BL050_LINE = (
    "pipelines/long_report.yaml:15:9: error[BL050] step 'write_report' does not fit the"
    " context window: fixed 101 (system prompt 48 + template 21 + format overhead 32)"
    " + history 0 + context 6144 + output 2048 + margin 128 = 8421 > 8192 (over by 229)"
)


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True, env=_git_env())
    return done.stdout


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    # Never read the user's or the machine's git configuration (hooks, signing, templates).
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_TERMINAL_PROMPT="0")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(name, None)
    return env


def _new_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q")
    _git(path, "config", "user.name", "budgetlens test")
    _git(path, "config", "user.email", "test@budgetlens.invalid")
    _git(path, "config", "commit.gpgsign", "false")


def _commit_all(path: Path) -> None:
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "snapshot")


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A committed snapshot of this checkout's working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True, env=_git_env()).stdout
    repo = tmp_path_factory.mktemp("hook-repo")
    _new_repo(repo)
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if not source.is_file():  # deleted in the working tree, or a submodule
            continue
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    assert (repo / ".pre-commit-hooks.yaml").is_file()
    _commit_all(repo)
    return repo


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def _workspace(tmp_path: Path, *, drop: tuple[str, ...] = ()) -> Path:
    """A git repository whose root is a copy of examples/, committed."""
    repo = tmp_path / "team-repo"
    shutil.copytree(ROOT / "examples", repo)
    for name in drop:
        (repo / name).unlink()
    _new_repo(repo)
    _commit_all(repo)
    return repo


def _try_repo(workspace: Path, hook_repo: Path, home: Path, hook: str = "budgetlens-check",
              *extra: str) -> subprocess.CompletedProcess[str]:
    env = _git_env()
    env.update(PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", NO_COLOR="1")
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook,
         "--all-files", "--color", "never", "--verbose", *extra],
        cwd=workspace, capture_output=True, text=True, env=env, timeout=900)


def test_hook_fails_with_the_bl050_line_on_an_over_budget_workspace(
        tmp_path: Path, hook_repo: Path, pre_commit_home: Path) -> None:
    done = _try_repo(_workspace(tmp_path), hook_repo, pre_commit_home)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "budgetlens check" in output and "Failed" in output, output
    assert "- exit code: 1" in output, output
    assert BL050_LINE in output, output


def test_hook_passes_on_a_fitting_workspace(
        tmp_path: Path, hook_repo: Path, pre_commit_home: Path) -> None:
    workspace = _workspace(tmp_path, drop=("pipelines/long_report.yaml",))
    done = _try_repo(workspace, hook_repo, pre_commit_home)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    # "Passed", not "(no files to check)Skipped": the hook really ran over the workspace.
    assert "budgetlens check" in output, output
    assert "Passed" in output and "Skipped" not in output, output
    assert "BL050" not in output, output
    # --verbose shows the hook's own output: the four remaining example pipelines were checked.
    assert "4 pipelines, 6 call_model steps (0 not fitting): 0 errors" in output, output


def test_manual_clamp_hook_writes_the_clamp_plan(
        tmp_path: Path, hook_repo: Path, pre_commit_home: Path) -> None:
    workspace = _workspace(tmp_path)
    pipeline = workspace / "pipelines/long_report.yaml"
    before = pipeline.read_text("utf-8")
    assert "  max_context_tokens: 6144\n" in before
    done = _try_repo(workspace, hook_repo, pre_commit_home, "budgetlens-clamp",
                     "--hook-stage", "manual")
    output = done.stdout + done.stderr
    # pre-commit fails a hook that modified files; the one edit is the README's clamp fix.
    assert done.returncode == 1, output
    assert "files were modified by this hook" in output, output
    assert pipeline.read_text("utf-8") == before.replace(
        "  max_context_tokens: 6144\n", "  max_context_tokens: 5915\n")
    assert _git(workspace, "status", "--porcelain") == " M pipelines/long_report.yaml\n"
