"""The GitHub Action (``action.yml``), run locally in a simulated GitHub environment.

Each ``run:`` step of the composite action runs as the runner runs it (``bash --noprofile
--norc -eo pipefail``), in order, in a temporary git repository with two commits (the second
pushes ``write_report`` over its window), with:

- its ``${{ ... }}`` expressions replaced by a small, strict evaluator that knows only the
  expressions the action uses (``inputs.*``, ``github.action_path``, ``github.event_name``,
  ``github.token``, ``runner.temp``, ``steps.<id>.outputs.*``) and fails on any other;
- a fresh ``GITHUB_OUTPUT`` file per step, parsed into ``steps.<id>.outputs`` as the runner
  does, and one ``GITHUB_STEP_SUMMARY``;
- ``GITHUB_EVENT_PATH`` holding a ``pull_request`` payload with the two commits' SHAs;
- ``GITHUB_API_URL`` pointing at a fake of GitHub's issue-comments API on 127.0.0.1 (an
  ``http.server`` thread that checks the token).

A failing step stops the ones after it, as in a composite action. Most tests use the
``budgetlens`` of this checkout (``install: false``); ``test_the_install_step_*`` runs the
real install step (a virtualenv and ``pip install`` of a copy of the checkout), which is slow.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.waiting import HANG_GUARD

REPO = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((REPO / "action.yml").read_text("utf-8"))
TOKEN = "ghs_fake-token-for-the-test"
OWNER_REPO = "octo/prompts"
PR_NUMBER = 7
MARKER = "<!-- budgetlens-diff -->"
ANNOTATION = ("::error file=examples/pipelines/long_report.yaml,line=15,col=9,endLine=15,"
              "endColumn=21,title=BL050::step 'write_report' does not fit the context window")


# ---------------------------------------------------------------------------- fake API
@dataclass
class FakeGitHub:
    """GitHub's issue comments, as far as the action uses them."""
    read_only: bool = False
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    next_id: int = 1000

    def handle(self, method: str, path: str, auth: str | None,
               body: Any) -> tuple[int, Any]:
        self.requests.append((method, path))
        if auth != f"Bearer {TOKEN}":
            return 401, {"message": "Bad credentials"}
        route = path.split("?")[0]
        listing = f"/repos/{OWNER_REPO}/issues/{PR_NUMBER}/comments"
        one = re.fullmatch(rf"/repos/{OWNER_REPO}/issues/comments/(\d+)", route)
        if method == "GET" and route == listing:
            page = int(re.search(r"[?&]page=(\d+)", path).group(1))  # type: ignore[union-attr]
            per_page = int(re.search(r"[?&]per_page=(\d+)", path).group(1))  # type: ignore[union-attr]
            everything = list(self.comments.values())
            return 200, everything[(page - 1) * per_page:page * per_page]
        if self.read_only and method in ("POST", "PATCH"):
            return 403, {"message": "Resource not accessible by integration"}
        if method == "POST" and route == listing:
            comment = {"id": self.next_id, "body": body["body"], "user": {"login": "bot"}}
            self.comments[self.next_id] = comment
            self.next_id += 1
            return 201, comment
        if method == "PATCH" and one and int(one.group(1)) in self.comments:
            self.comments[int(one.group(1))]["body"] = body["body"]
            return 200, self.comments[int(one.group(1))]
        return 404, {"message": "Not Found"}


def _handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            status, answer = fake.handle(self.command, self.path,
                                         self.headers.get("Authorization"),
                                         json.loads(raw) if raw else None)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture()
def github() -> Iterator[tuple[FakeGitHub, str]]:
    fake = FakeGitHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# ---------------------------------------------------------------------------- the repository
def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=HANG_GUARD, check=True)
    return done.stdout.strip()


@dataclass
class Workspace:
    root: Path
    base: str
    head: str


def make_repository(root: Path, second_commit_warns: bool = False) -> Workspace:
    """examples/ in two commits: the first fits (context 5000), the second is examples/ as
    shipped (context 6144: ``write_report`` over its 8192-token window by 229)."""
    root.mkdir(parents=True)
    shutil.copytree(REPO / "examples", root / "examples")
    pipeline = root / "examples" / "pipelines" / "long_report.yaml"
    shipped = pipeline.read_text("utf-8")
    assert "max_context_tokens: 6144" in shipped
    pipeline.write_text(shipped.replace("max_context_tokens: 6144",
                                        "max_context_tokens: 5000"), "utf-8")
    _git(root, "init", "-q", "-b", "main")
    for key, value in (("user.name", "t"), ("user.email", "t@example.invalid"),
                       ("commit.gpgsign", "false")):
        _git(root, "config", key, value)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "fits")
    base = _git(root, "rev-parse", "HEAD")
    if second_commit_warns:  # a near-miss key (a warning), the budget still fits
        chat = root / "examples" / "pipelines" / "chat.yaml"
        chat.write_text(chat.read_text("utf-8").replace(
            "    max_tokens: 768\n", "    max_tokens: 768\n    prompt_kye: chat\n"), "utf-8")
    else:
        pipeline.write_text(shipped, "utf-8")
    _git(root, "commit", "-q", "-am", "more context")
    return Workspace(root, base, _git(root, "rev-parse", "HEAD"))


# ---------------------------------------------------------------------------- the runner
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)


class UnknownExpression(Exception):
    pass


@dataclass
class Run:
    steps: list[tuple[str, int, str, str]]  # id, exit status, stdout, stderr
    outputs: dict[str, str]
    step_outputs: dict[str, dict[str, str]]
    summary: str

    @property
    def stdout(self) -> str:
        return "".join(out for _, _, out, _ in self.steps)

    @property
    def failed(self) -> str | None:
        return next((sid for sid, status, _, _ in self.steps if status != 0), None)


class Simulation:
    def __init__(self, workspace: Workspace, tmp: Path, api_url: str,
                 inputs: dict[str, str], event_name: str = "pull_request",
                 action_path: Path = REPO) -> None:
        self.workspace = workspace
        self.tmp = tmp
        self.api_url = api_url
        self.event_name = event_name
        self.action_path = action_path
        unknown = set(inputs) - set(ACTION["inputs"])
        assert not unknown, f"not inputs of action.yml: {unknown}"
        self.inputs = inputs
        self.step_outputs: dict[str, dict[str, str]] = {}
        self.runner_temp = tmp / "runner-temp"
        self.runner_temp.mkdir(parents=True, exist_ok=True)

    # a strict evaluator of the few expressions the action uses
    def value(self, expression: str) -> str:
        expr = expression.strip()
        parts = expr.split(".")
        if not re.fullmatch(r"[a-z_]+(\.[A-Za-z0-9_-]+)+", expr):
            raise UnknownExpression(expr)
        if parts[0] == "inputs" and len(parts) == 2 and parts[1] in ACTION["inputs"]:
            if parts[1] in self.inputs:
                return self.inputs[parts[1]]
            return self.substitute(str(ACTION["inputs"][parts[1]].get("default", "")))
        fixed = {"github.action_path": str(self.action_path),
                 "github.event_name": self.event_name,
                 "github.token": TOKEN,
                 "runner.temp": str(self.runner_temp)}
        if expr in fixed:
            return fixed[expr]
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            if parts[1] not in {step.get("id") for step in ACTION["runs"]["steps"]}:
                raise UnknownExpression(f"{expr}: no step {parts[1]!r}")
            # a step skipped after a failure has no outputs: empty, as on GitHub
            return self.step_outputs.get(parts[1], {}).get(parts[3], "")
        raise UnknownExpression(expr)

    def substitute(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.value(m.group(1)), text)

    def environ(self, output: Path, summary: Path, event: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GITHUB_", "RUNNER_", "INPUT_"))
               and k not in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT")}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env.update({"GITHUB_ACTIONS": "true", "CI": "true",
                    "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary),
                    "GITHUB_EVENT_PATH": str(event), "GITHUB_EVENT_NAME": self.event_name,
                    "GITHUB_API_URL": self.api_url, "GITHUB_REPOSITORY": OWNER_REPO,
                    "GITHUB_WORKSPACE": str(self.workspace.root),
                    "RUNNER_TEMP": str(self.runner_temp)})
        return env

    def event(self) -> Path:
        path = self.tmp / "event.json"
        payload: dict[str, Any] = {"repository": {"full_name": OWNER_REPO}}
        if self.event_name == "pull_request":
            payload |= {"action": "synchronize", "number": PR_NUMBER,
                        "pull_request": {"number": PR_NUMBER,
                                         "base": {"ref": "main", "sha": self.workspace.base},
                                         "head": {"ref": "more", "sha": self.workspace.head}}}
        else:
            payload |= {"ref": "refs/heads/main", "after": self.workspace.head}
        path.write_text(json.dumps(payload), "utf-8")
        return path

    def run(self) -> Run:
        assert ACTION["runs"]["using"] == "composite"
        summary = self.tmp / "step-summary.md"
        summary.write_text("", "utf-8")
        event = self.event()
        steps: list[tuple[str, int, str, str]] = []
        for n, step in enumerate(ACTION["runs"]["steps"]):
            assert set(step) <= {"name", "id", "shell", "env", "run"}, step
            assert step["shell"] == "bash"
            assert "${{" not in step["run"], "expressions go through env:, not into scripts"
            output = self.tmp / f"output-{n}"
            output.write_text("", "utf-8")
            env = self.environ(output, summary, event)
            env.update({k: self.substitute(str(v)) for k, v in step.get("env", {}).items()})
            script = self.tmp / f"step-{n}.sh"
            script.write_text(step["run"], "utf-8")
            done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail",
                                   str(script)], cwd=self.workspace.root, env=env,
                                  capture_output=True, text=True, timeout=HANG_GUARD)
            self.step_outputs[step["id"]] = parse_output(output.read_text("utf-8"))
            steps.append((step["id"], done.returncode, done.stdout, done.stderr))
            if done.returncode != 0:
                break  # a composite action stops at its first failing step
        outputs = {name: self.substitute(spec["value"])
                   for name, spec in ACTION["outputs"].items()}
        return Run(steps, outputs, self.step_outputs, summary.read_text("utf-8"))


def parse_output(text: str) -> dict[str, str]:
    """``name=value`` lines and ``name<<DELIMITER`` blocks, as the runner reads them."""
    got: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            for inner in lines:
                if inner == delimiter:
                    break
                block.append(inner)
            got[name] = "\n".join(block)
        elif line:
            name, value = line.split("=", 1)
            got[name] = value
    return got


def local(workspace: Workspace, tmp: Path, api_url: str, **inputs: str) -> Simulation:
    return Simulation(workspace, tmp, api_url, {"install": "false", "python": sys.executable,
                                                 **inputs})


# ---------------------------------------------------------------------------- tests
def test_the_evaluator_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    sim = Simulation(Workspace(tmp_path, "", ""), tmp_path, "http://127.0.0.1:9", {})
    for expr in ("github.repository", "secrets.TOKEN", "inputs.nope", "inputs.path || 'x'",
                 "toJSON(github)", "steps.later.outputs.x", "env.HOME"):
        with pytest.raises(UnknownExpression):
            sim.value(expr)
    assert sim.value(" inputs.fail-on ") == "warning"
    assert sim.value("inputs.github-token") == TOKEN  # a default that is an expression


def test_a_pull_request_gets_annotations_sarif_outputs_and_one_comment(
        tmp_path: Path, github: tuple[FakeGitHub, str]) -> None:
    fake, url = github
    workspace = make_repository(tmp_path / "repo")
    run = local(workspace, tmp_path, url, path="examples").run()

    # the check failed on the error, and only the verdict step says so
    assert [(sid, status) for sid, status, _, _ in run.steps] == [
        ("install", 0), ("check", 0), ("diff", 0), ("comment", 0), ("verdict", 1)]
    assert any(line.startswith(ANNOTATION) for line in run.stdout.splitlines()), run.stdout

    sarif_path = workspace.root / "budgetlens.sarif"
    sarif = json.loads(sarif_path.read_text("utf-8"))
    assert sarif["version"] == "2.1.0"
    [result] = sarif["runs"][0]["results"]
    assert (result["ruleId"], result["level"]) == ("BL050", "error")
    assert run.outputs == {"exit-code": "1", "sarif-file": "budgetlens.sarif",
                           "errors": "1", "warnings": "0"}

    # one comment, starting with the marker, holding the diff table of the change
    assert [m for m, _ in fake.requests] == ["GET", "POST"]
    [comment] = fake.comments.values()
    body = comment["body"]
    assert body.startswith(MARKER + "\n")
    assert "write_report" in body and "|" in body
    # the total before (context 5000) and after (context 6144: 8421, over 8192 by 229)
    assert "| **newly failing** | `pipelines/long_report.yaml` | `write_report` |" in body
    assert "7,277 → 8,421 (+1,144)" in body

    # the summary: the check's counts and table, then the same diff
    assert "## budgetlens check" in run.summary
    assert "1 error(s), 0 warning(s)" in run.summary
    assert "| error | BL050 | examples/pipelines/long\\_report\\.yaml:15 |" in run.summary
    assert body[len(MARKER) + 1:] in run.summary


def test_a_second_run_updates_the_comment_instead_of_adding_one(
        tmp_path: Path, github: tuple[FakeGitHub, str]) -> None:
    fake, url = github
    workspace = make_repository(tmp_path / "repo")
    # somebody else's comment that mentions the marker is not the action's
    fake.comments[1] = {"id": 1, "body": f"see {MARKER} below", "user": {"login": "me"}}
    first = local(workspace, tmp_path / "1", url)  # path: the default, the repository root
    first.run()
    assert len(fake.comments) == 2
    [(made_id, made)] = [(i, c) for i, c in fake.comments.items() if i != 1]
    made["body"] = MARKER + "\nstale"
    second = local(workspace, tmp_path / "2", url).run()
    assert "updated comment" in second.stdout
    assert sorted(fake.comments) == [1, made_id]  # not duplicated
    assert fake.comments[made_id]["body"].startswith(MARKER + "\n")
    assert "| **newly failing** | `examples/pipelines/long_report.yaml` | `write_report` |" \
        in fake.comments[made_id]["body"]
    assert fake.comments[1]["body"] == f"see {MARKER} below"
    assert [m for m, _ in fake.requests] == ["GET", "POST", "GET", "PATCH"]


def test_a_read_only_token_is_a_warning_not_a_crash(
        tmp_path: Path, github: tuple[FakeGitHub, str]) -> None:
    fake, url = github
    fake.read_only = True  # a pull request from a fork
    workspace = make_repository(tmp_path / "repo")
    run = local(workspace, tmp_path, url, path="examples").run()
    [(_, status, out, err)] = [s for s in run.steps if s[0] == "comment"]
    assert status == 0, err
    assert out.startswith("::warning title=budgetlens comment::cannot comment on the pull"
                          " request"), out
    assert "403" in out and "Traceback" not in err
    assert fake.comments == {}
    assert "write_report" in run.summary  # the diff is still in the job summary
    assert run.outputs["exit-code"] == "1"


def test_a_wrong_token_is_an_error(tmp_path: Path, github: tuple[FakeGitHub, str]) -> None:
    _, url = github
    workspace = make_repository(tmp_path / "repo")
    run = local(workspace, tmp_path, url, path="examples",
                **{"github-token": "ghs_wrong"}).run()
    assert run.failed == "comment"
    [(_, _, out, err)] = [s for s in run.steps if s[0] == "comment"]
    assert out.startswith("::error title=budgetlens comment::GET http://127.0.0.1:"), out
    assert "HTTP 401 Bad credentials" in out and "ghs_wrong" not in out + err


def test_comment_false_and_a_push_event_post_nothing(
        tmp_path: Path, github: tuple[FakeGitHub, str]) -> None:
    fake, url = github
    workspace = make_repository(tmp_path / "repo")
    run = local(workspace, tmp_path / "a", url, path="examples", comment="false").run()
    assert run.failed == "verdict" and "write_report" in run.summary
    push = Simulation(workspace, tmp_path / "b", url,
                      {"install": "false", "python": sys.executable, "path": "examples"},
                      event_name="push").run()
    assert push.failed == "verdict"
    assert "## budgetlens check" in push.summary and "write_report" not in push.summary
    assert fake.requests == []


def test_fail_on_warning_fails_a_warning_and_fail_on_error_does_not(
        tmp_path: Path, github: tuple[FakeGitHub, str]) -> None:
    _, url = github
    workspace = make_repository(tmp_path / "repo", second_commit_warns=True)
    verdicts = {}
    for fail_on in ("warning", "error"):
        run = local(workspace, tmp_path / fail_on, url, path="examples",
                    comment="false", **{"fail-on": fail_on}).run()
        assert "::warning file=examples/pipelines/chat.yaml,line=15," in run.stdout
        assert (run.outputs["errors"], run.outputs["warnings"]) == ("0", "1")
        verdicts[fail_on] = (run.outputs["exit-code"], run.failed)
    assert verdicts == {"warning": ("1", "verdict"), "error": ("0", None)}


def test_targets_and_sarif_file_inputs(tmp_path: Path, github: tuple[FakeGitHub, str]) -> None:
    _, url = github
    workspace = make_repository(tmp_path / "repo")
    run = local(workspace, tmp_path, url, path="examples", comment="false",
                targets="gpt-4o", **{"sarif-file": "out/report.sarif"}).run()
    assert run.outputs["sarif-file"] == "out/report.sarif"
    sarif = json.loads((workspace.root / "out" / "report.sarif").read_text("utf-8"))
    assert "targets" in json.dumps(sarif["runs"][0].get("properties", {})), sarif["runs"][0]


def test_a_check_that_cannot_run_is_exit_2_and_posts_nothing(
        tmp_path: Path, github: tuple[FakeGitHub, str]) -> None:
    fake, url = github
    workspace = make_repository(tmp_path / "repo")
    run = local(workspace, tmp_path, url, path="no-such-folder").run()
    assert run.failed == "verdict"
    assert run.outputs["exit-code"] == "2"
    assert "::error title=budgetlens::no SARIF report was written to budgetlens.sarif" \
        in run.stdout
    assert "could not check (exit status 2): no report" in run.summary
    assert "budgetlens diff failed (exit status 2)" in run.stdout
    assert fake.comments == {}


def _action_copy(dest: Path) -> Path:
    """What GitHub downloads for ``uses: OWNER/budgetlens@v9.8.7``: ``git archive`` of the
    tag (export-subst fills in .git_archival.txt), without .git. Made from a copy of the
    checkout's files committed and tagged in a temporary repository (the editor clients,
    benchmarks and tests left out to keep it small)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist",
                                    "_version.txt")
    repo = dest.parent / "action-repo"
    repo.mkdir(parents=True)
    for name in ("action.yml", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in",
                 "CHANGELOG.md", ".git_archival.txt", ".gitattributes"):
        shutil.copy2(REPO / name, repo / name)
    for name in ("shared_core", "server", "scripts"):
        shutil.copytree(REPO / name, repo / name, ignore=ignore)
    _git(repo, "init", "-q")
    for key, value in (("user.name", "t"), ("user.email", "t@example.invalid"),
                       ("commit.gpgsign", "false"), ("tag.gpgsign", "false")):
        _git(repo, "config", key, value)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "release")
    _git(repo, "tag", "-a", "v9.8.7", "-m", "release")
    archive = dest.parent / "action.tar"
    _git(repo, "archive", "--format=tar", "-o", str(archive), "v9.8.7")
    dest.mkdir()
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.10.12+
            tar.extractall(dest, filter="data")
        else:  # our own archive
            tar.extractall(dest)
    assert "$Format" not in (dest / ".git_archival.txt").read_text("utf-8")
    return dest


@pytest.mark.slow
def test_the_install_step_installs_the_action_checkout_into_a_fresh_venv(
        tmp_path: Path, github: tuple[FakeGitHub, str]) -> None:
    """SLOW (a virtualenv and a pip install with dependencies): the real install step."""
    fake, url = github
    workspace = make_repository(tmp_path / "repo")
    action_path = _action_copy(tmp_path / "action")
    run = Simulation(workspace, tmp_path, url,
                     {"install": "true", "python": sys.executable, "path": "examples"},
                     action_path=action_path).run()
    venv = tmp_path / "runner-temp" / "budgetlens-venv"
    assert run.step_outputs["install"]["budgetlens"] == str(venv / "bin" / "budgetlens")
    [(_, status, out, err)] = [s for s in run.steps if s[0] == "install"]
    assert status == 0, err
    assert out == "budgetlens 9.8.7\n", out  # the tag, from .git_archival.txt
    assert any(line.startswith(ANNOTATION) for line in run.stdout.splitlines())
    assert run.outputs["exit-code"] == "1" and len(fake.comments) == 1
