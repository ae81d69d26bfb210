"""The test command runs every stage and reports every failure (``scripts/stages.sh``).

``scripts/run_tests.sh`` and ``.ci/run`` are run for real, copied into a folder where each
stage is a stub that records that it ran: a failing stage must not keep the next one from
running, the summary names each failure, and the exit status is non-zero.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from tests.waiting import HANG_GUARD

REPO = Path(__file__).resolve().parents[2]


def _script(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/usr/bin/env bash\n" + body, "utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run(command: list[str], cwd: Path,
         path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path is not None:
        env["PATH"] = path + os.pathsep + env["PATH"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=HANG_GUARD)


def test_a_failing_stage_does_not_stop_the_next(tmp_path: Path) -> None:
    script = (f"set -euo pipefail\n. {REPO / 'scripts' / 'stages.sh'}\n"
              "run_stage first false\n"
              "run_stage second touch second.ran\n"
              "run_stage third sh -c 'exit 3'\n"
              "stage_summary\n")
    proc = _run(["bash", "-c", script], tmp_path)
    assert (tmp_path / "second.ran").exists()  # ran after the failing one
    assert proc.returncode == 1, proc.stderr
    summary = proc.stdout.split("==> summary\n", 1)[1].splitlines()
    assert summary == ["FAIL  first (exit 1)", "PASS  second", "FAIL  third (exit 3)",
                       "2 of 3 stages failed"]


def test_every_stage_passing_exits_zero(tmp_path: Path) -> None:
    script = (f"set -euo pipefail\n. {REPO / 'scripts' / 'stages.sh'}\n"
              "run_stage one true\nrun_stage two true\nstage_summary\n")
    proc = _run(["bash", "-c", script], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("PASS  one\nPASS  two\nall 2 stages passed\n")


def _fake_tree(root: Path) -> Path:
    """A copy of the test command where every install is done and every stage is a stub."""
    for name in ("scripts/run_tests.sh", "scripts/stages.sh", ".ci/run"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)
    (root / "pyproject.toml").write_text("", "utf-8")
    (root / "editor-clients" / "vscode").mkdir(parents=True)
    (root / "editor-clients" / "vscode" / "package.json").write_text("{}", "utf-8")
    ran = root / "ran"
    ran.mkdir()
    stages = {
        "editor-clients/vscode/scripts/test.sh": ("extension", 2, ""),
        "editor-clients/vscode/scripts/e2e.sh": ("e2e", 0, ""),
        ".tools/nvim011/bin/nvim": ("nvim011", 0, ""),
        "bin/nvim": ("nvim", 0, ""),
        "bin/dpkg-query": ("dpkg-query", 0, "install ok installed"),
        ".venv/bin/ruff": ("ruff", 0, ""),
        ".venv/bin/mypy": ("mypy", 1, ""),
    }
    for path, (name, code, say) in stages.items():
        _script(root / path, f'echo "$@" >> "{ran}/{name}"\nprintf %s "{say}"\nexit {code}\n')
    # pip installs nothing; pytest fails and closes with its summary line
    _script(root / ".venv/bin/python",
            f'echo "$@" >> "{ran}/python"\n'
            'if [ "$2" = pytest ]; then\n'
            '  echo "F.."; echo "1 failed, 2 passed in 0.01s"; exit 1\n'
            'fi\n')
    return root


def test_run_tests_runs_the_end_to_end_stage_after_failures(tmp_path: Path) -> None:
    root = _fake_tree(tmp_path)
    proc = _run(["bash", "scripts/run_tests.sh", "-x", "tests/cli"], root, str(root / "bin"))
    ran = root / "ran"
    assert (ran / "extension").exists() and (ran / "e2e").exists(), proc.stdout + proc.stderr
    assert "-m pytest -q -p no:cacheprovider -x tests/cli" in (ran / "python").read_text()
    assert proc.returncode == 1
    summary = proc.stdout.split("==> summary\n", 1)[1].splitlines()
    assert summary == [
        "FAIL  VS Code extension: npm ci, type-check, lint, unit tests, package (exit 2)",
        "FAIL  pytest (exit 1)",
        "PASS  VS Code end to end (code-server + chromium)",
        "2 of 3 stages failed"]
    assert "\n1 failed, 2 passed in 0.01s\n" in proc.stdout  # pytest's own closing line
    assert "==> pytest: 1 failed, 2 passed in 0.01s\n" in proc.stdout


def test_ci_runs_ruff_and_mypy_after_failing_tests(tmp_path: Path) -> None:
    root = _fake_tree(tmp_path)
    proc = _run(["bash", ".ci/run"], root, str(root / "bin"))
    ran = root / "ran"
    assert (ran / "e2e").exists() and (ran / "ruff").exists() and (ran / "mypy").exists()
    assert proc.returncode == 1
    summary = proc.stdout.rsplit("==> summary\n", 1)[1].splitlines()
    assert summary == ["FAIL  tests (scripts/run_tests.sh) (exit 1)", "PASS  ruff",
                       "FAIL  mypy (strict: core, server, CLI) (exit 1)", "2 of 3 stages failed"]
