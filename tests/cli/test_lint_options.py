"""``budgetlens check``'s ruff-style control (issue 35): ``--select``, ``--ignore``,
``--extend-select``, config.json's ``lint`` block, ``# budgetlens: ignore[...]`` comments and
BL080, ``--fail-on``, ``--exit-zero``, ``--exclude``/``--extend-exclude``, ``.gitignore``,
``--quiet``, ``--silent``, ``--statistics`` and JUnit's warnings.

The workspace is a copy of ``ci_workspace``; by hand, ``check`` finds in
``pipelines/small.yaml``: BL105 (information) at 8:35, BL050 (error) at 18:9 (step ``essay``)
and BL042 (warning) at 25:9 (step ``echo``).
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from budgetlens_cli.main import main
from tests.core.contract.helpers import tokens

CI_WORKSPACE = Path(__file__).resolve().parent / "ci_workspace"
ROOT = Path(__file__).resolve().parents[2]
PIPELINE = "ws/pipelines/small.yaml"
BL105 = f"{PIPELINE}:8:35: information[BL105]"
BL050 = f"{PIPELINE}:18:9: error[BL050]"
BL042 = f"{PIPELINE}:25:9: warning[BL042]"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(CI_WORKSPACE, tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    for name in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", "NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    return Path("ws")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv, "--no-cache"])
    out, err = capsys.readouterr()
    return code, out, err


def heads(out: str) -> list[str]:
    """The ``file:line:col: severity[CODE]`` part of each diagnostic's first line."""
    return [line.split("] ", 1)[0] + "]" for line in out.splitlines()
            if line.startswith("ws/") and "[BL" in line]


def comment_line(path: Path, number: int, comment: str) -> None:
    """Append ``comment`` to line ``number`` (1-based) of ``path``."""
    lines = path.read_text("utf-8").split("\n")
    lines[number - 1] += "  " + comment
    path.write_text("\n".join(lines), "utf-8")


def set_lint(ws: Path, lint: object) -> None:
    config = json.loads((ws / "config.json").read_text("utf-8"))
    config["lint"] = lint
    (ws / "config.json").write_text(json.dumps(config), "utf-8")


# ---------------------------------------------------------------------------- selection
def test_without_options_every_code_shows_and_only_the_error_fails(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ws")
    assert heads(out) == [BL105, BL050, BL042] and code == 1


def test_select_a_prefix_keeps_only_its_codes(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ws", "--select", "BL04")
    assert heads(out) == [BL042]
    assert code == 0  # the error is not selected
    assert out.splitlines()[-1].endswith("0 errors, 1 warning")


def test_ignore_a_code_and_comma_separated_select(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ws", "--ignore", "BL050")
    assert heads(out) == [BL105, BL042] and code == 0
    code, out, _ = run(capsys, "ws", "--select", "BL050,BL105")
    assert heads(out) == [BL105, BL050] and code == 1


def test_the_most_specific_selector_wins_and_all_selects_everything(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # ALL on, BL0 off (more specific than ALL), BL042 on again (more specific than BL0)
    code, out, _ = run(capsys, "ws", "--select", "ALL", "--ignore", "BL0",
                       "--extend-select", "BL042")
    assert heads(out) == [BL105, BL042] and code == 0


def test_extend_select_adds_to_config_select(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_lint(ws, {"select": ["BL05"]})
    code, out, _ = run(capsys, "ws")
    assert heads(out) == [BL050] and code == 1
    code, out, _ = run(capsys, "ws", "--extend-select", "BL042")
    assert heads(out) == [BL050, BL042]
    code, out, _ = run(capsys, "ws", "--select", "BL1")  # replaces the config's
    assert heads(out) == [BL105] and code == 0


def test_config_ignore_and_per_file_ignores(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_lint(ws, {"ignore": ["BL105"], "per_file_ignores": {"pipelines/small.yaml": ["BL050"]}})
    code, out, _ = run(capsys, "ws")
    assert heads(out) == [BL042] and code == 0
    set_lint(ws, {"per_file_ignores": {"pipelines/other*.yaml": ["BL050"]}})
    code, out, _ = run(capsys, "ws")
    assert heads(out) == [BL105, BL050, BL042] and code == 1


def test_an_unknown_code_is_bad_usage_naming_the_nearest(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "ws", "--select", "BL05O")
    assert code == 2 and out == ""
    assert err == ("budgetlens: error: --select: unknown code 'BL05O' (did you mean BL050?)\n")
    code, _, err = run(capsys, "ws", "--ignore", "BL999")
    assert code == 2 and "--ignore: unknown code 'BL999'" in err


def test_an_unknown_code_in_config_is_bad_usage_naming_the_file(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    set_lint(ws, {"ignore": ["BL0500"]})
    code, _, err = run(capsys, "ws")
    assert code == 2
    assert "ws/config.json: lint.ignore: unknown code 'BL0500'" in err
    set_lint(ws, {"per_file_ignore": {"config.json": ["BL061"]}})
    code, _, err = run(capsys, "ws")
    assert code == 2
    assert err == ("budgetlens: error: ws/config.json: lint: unknown key 'per_file_ignore'"
                   " (did you mean per_file_ignores?)\n")


# ---------------------------------------------------------------------------- comments
def test_a_comment_on_the_pipeline_line_suppresses_its_code(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    comment_line(ws / "pipelines/small.yaml", 18, "# budgetlens: ignore[BL050]")
    comment_line(ws / "pipelines/small.yaml", 25, "# budgetlens: ignore")
    code, out, _ = run(capsys, "ws")
    assert heads(out) == [BL105] and code == 0


def test_an_unused_comment_is_a_bl080_warning(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    yaml = ws / "pipelines/small.yaml"
    comment_line(yaml, 18, "# budgetlens: ignore[BL050, BL061]")  # BL061: nothing here
    comment_line(yaml, 11, "# budgetlens: ignore")  # `- id: summarize`: nothing
    comment_line(yaml, 4, "# budgetlens: ignore[BL500]")  # no such code
    code, out, _ = run(capsys, "ws", "--fail-on", "warning")
    lines = out.splitlines()
    # `  max_context_tokens: 600  #` : the comment starts at column 28
    assert f"{PIPELINE}:4:28: warning[BL080] unused suppression: unknown code BL500" in lines
    assert f"{PIPELINE}:11:20: warning[BL080] unused suppression: no diagnostic on this line" \
        in lines
    assert f"{PIPELINE}:18:16: warning[BL080] unused suppression: no BL061 diagnostic on" \
           " this line" in lines
    assert BL050 not in heads(out) and code == 1
    code, out, _ = run(capsys, "ws", "--ignore", "BL080,BL050")
    assert heads(out) == [BL105, BL042] and code == 0


def test_a_suppressed_code_turned_off_is_reported_unused(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    comment_line(ws / "pipelines/small.yaml", 18, "# budgetlens: ignore[BL050]")
    _, out, _ = run(capsys, "ws", "--ignore", "BL050")
    assert f"{PIPELINE}:18:16: warning[BL080]" in heads(out)


def test_a_comment_in_a_parent_pipeline(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A diagnostic in the parent of an ``extends`` chain is suppressed in the parent; the
    child's BL023 (its parent has errors) goes with it."""
    base = "settings:\n  max_context_tokens: 600\n  max_history_token: 100{}\nsteps: []\n"
    (ws / "pipelines/base.yaml").write_text(base.format(""), "utf-8")
    child = (ws / "pipelines/small.yaml").read_text("utf-8")
    (ws / "pipelines/small.yaml").write_text("extends: base.yaml\n" + child, "utf-8")
    _, out, _ = run(capsys, "ws")
    assert "ws/pipelines/base.yaml:3:3: error[BL008]" in heads(out)
    assert f"{PIPELINE}:1:10: error[BL023]" in heads(out)
    (ws / "pipelines/base.yaml").write_text(base.format("  # budgetlens: ignore[BL008]"),
                                            "utf-8")
    code, out, _ = run(capsys, "ws")
    assert not [h for h in heads(out) if "base.yaml" in h or "BL023" in h]
    assert f"{PIPELINE}:19:9: error[BL050]" in heads(out) and code == 1


def test_a_prompt_named_by_the_pipeline_line_is_suppressed_there(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    yaml = ws / "pipelines/small.yaml"
    yaml.write_text(yaml.read_text("utf-8").replace("prompt_key: helper\n    user_parts:\n"
                                                    "      template: \"Write",
                                                    "prompt_key: absent\n    user_parts:\n"
                                                    "      template: \"Write", 1), "utf-8")
    _, out, _ = run(capsys, "ws")
    assert f"{PIPELINE}:20:17: error[BL040]" in heads(out)
    comment_line(yaml, 20, "# budgetlens: ignore[BL040]")
    _, out, _ = run(capsys, "ws")
    assert not [h for h in heads(out) if "BL040" in h]


def test_a_comment_in_a_prompt_text_file_is_prompt_text(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A prompt file is sent to the model as it is: a comment there is counted, never read
    as a suppression (docs/cli.md)."""
    prompt = "You are a helpful assistant.\n# budgetlens: ignore[BL050]\n"
    (ws / "prompts/helper.txt").write_text(prompt, "utf-8")
    code, out, _ = run(capsys, "ws")
    assert BL050 in heads(out) and code == 1
    counted = tokens(prompt)
    assert f"= system_prompt: {counted} at ws/prompts/helper.txt:1:1" in out


def _opens(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """Every ``os.open`` of a file named ``name`` from now on (the check's reads and the
    lint pass's both open through it)."""
    import os

    opened: list[str] = []
    original = os.open

    def counting(path: object, *args: object, **kwargs: object) -> int:
        if os.path.basename(os.fsdecode(path)) == name:  # type: ignore[arg-type]
            opened.append(os.fsdecode(path))  # type: ignore[arg-type]
        return original(path, *args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(os, "open", counting)
    return opened


@pytest.mark.parametrize("cache", [False, True])
def test_a_checked_pipeline_without_a_comment_is_opened_once(
        ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, cache: bool) -> None:
    """The lint pass knows a pipeline the check read has no suppression comment: it does
    not open it again (with the result cache on or off). (The text output opens a file
    again to print its lines under its diagnostics; ``--statistics`` prints none.)"""
    opened = _opens(monkeypatch, "small.yaml")
    argv = ["--cache-dir", str(tmp_path / "cache")] if cache else ["--no-cache"]
    code = main(["check", "ws", "-j", "1", "--statistics", *argv])
    out = capsys.readouterr().out
    assert [line.split("\t")[:2] for line in out.splitlines()] == [
        ["1", "BL042"], ["1", "BL050"], ["1", "BL105"]]
    assert code == 1
    assert len(opened) == 1, opened


def test_a_checked_pipeline_with_a_comment_is_still_read_for_it(
        ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    comment_line(ws / "pipelines/small.yaml", 18, "# budgetlens: ignore[BL050]")
    opened = _opens(monkeypatch, "small.yaml")
    code, out, _ = run(capsys, "ws", "--statistics")
    assert [line.split("\t")[:2] for line in out.splitlines()] == [
        ["1", "BL042"], ["1", "BL105"]]
    assert code == 0
    assert len(opened) == 2, opened  # the check's read, then the lint pass's


def test_config_json_takes_no_comment_but_per_file_ignores(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """config.json is strict JSON: its diagnostics are turned off by file."""
    config = json.loads((ws / "config.json").read_text("utf-8"))
    config["model"] = "gpt-4oo"
    (ws / "config.json").write_text(json.dumps(config, indent=2), "utf-8")
    _, out, _ = run(capsys, "ws")
    assert [h for h in heads(out) if h.startswith("ws/config.json") and "BL061" in h]
    config["lint"] = {"per_file_ignores": {"config.json": ["BL061"]}}
    (ws / "config.json").write_text(json.dumps(config, indent=2), "utf-8")
    _, out, _ = run(capsys, "ws")
    assert not [h for h in heads(out) if "BL061" in h]


# ---------------------------------------------------------------------------- exit status
def test_fail_on_warning_and_exit_zero(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "ws", "--ignore", "BL050")[0] == 0
    assert run(capsys, "ws", "--ignore", "BL050", "--fail-on", "warning")[0] == 1
    assert run(capsys, "ws", "--select", "BL105", "--fail-on", "warning")[0] == 0
    code, out, _ = run(capsys, "ws", "--exit-zero")
    assert code == 0 and BL050 in heads(out)
    assert run(capsys, "ws", "--exit-zero", "--select", "NOPE")[0] == 2


# ---------------------------------------------------------------------------- output
def test_quiet_prints_the_diagnostics_only_and_silent_nothing(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, full, _ = run(capsys, "ws")
    code, out, _ = run(capsys, "ws", "--quiet")
    assert code == 1
    assert full.startswith(out) and out.endswith("   25 |   - id: echo\n      |         ^^^^\n")
    assert "call_model steps" not in out and "headroom" not in out
    code, out, err = run(capsys, "ws", "--silent")
    assert (code, out, err) == (1, "", "")


def test_statistics_counts_per_code(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "pipelines/copy.yaml").write_text((ws / "pipelines/small.yaml").read_text("utf-8"),
                                            "utf-8")
    code, out, _ = run(capsys, "ws", "--statistics")
    assert code == 1
    assert out == ("2\tBL042\tcall_model step without prompt_key\n"
                   "2\tBL050\tstep does not fit the context window (error in fail_fast,"
                   " warning in auto_clamp)\n"
                   "2\tBL105\tsettings.injection: the default shares do not add up to 1\n")
    code, out, _ = run(capsys, "ws", "--statistics", "--format", "json", "--select", "BL05")
    assert [(r["code"], r["count"]) for r in json.loads(out)] == [("BL050", 2)]


def test_color_always_and_never(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "ws", "--color", "always")
    assert "\x1b[1;31merror[BL050]\x1b[0m" in out and "\x1b[1;33mwarning[BL042]\x1b[0m" in out
    _, out, _ = run(capsys, "ws", "--color", "never")
    assert "\x1b[" not in out


def test_other_formats_show_the_selection(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for fmt in ("json", "sarif", "gitlab", "github"):
        code, out, _ = run(capsys, "ws", "--format", fmt, "--ignore", "BL050")
        assert "BL050" not in out and "BL042" in out and code == 0, fmt


# ---------------------------------------------------------------------------- JUnit
def _cases(out: str) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in ET.fromstring(out).iter("testcase")}


def test_junit_records_warnings_and_fails_them_under_fail_on_warning(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "ws", "--format", "junit")
    echo = _cases(out)["echo"]
    assert echo.find("failure") is None
    assert (echo.findtext("system-out") or "").startswith(BL042)
    code, out, _ = run(capsys, "ws", "--format", "junit", "--fail-on", "warning")
    failure = _cases(out)["echo"].find("failure")
    assert failure is not None and failure.get("type") == "BL042" and code == 1
    assert ET.fromstring(out).get("failures") == "2"


def test_junit_leaves_out_a_suppressed_step(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    comment_line(ws / "pipelines/small.yaml", 18, "# budgetlens: ignore[BL050]")
    code, out, _ = run(capsys, "ws", "--format", "junit")
    assert _cases(out)["essay"].find("failure") is None and code == 0
    assert ET.fromstring(out).get("failures") == "0"


# ---------------------------------------------------------------------------- the search
def _two_workspaces(root: Path) -> None:
    for name in ("a", "b", ".hidden"):
        shutil.copytree(CI_WORKSPACE, root / name)


def _checked(out: str) -> list[str]:
    return sorted({h.split("/pipelines/")[0] for h in heads(out)})


def test_exclude_and_extend_exclude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    _two_workspaces(tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(capsys, "ws")
    assert _checked(out) == ["ws/a", "ws/b"]  # hidden folders skipped by default
    _, out, _ = run(capsys, "ws", "--extend-exclude", "b")
    assert _checked(out) == ["ws/a"]
    _, out, _ = run(capsys, "ws", "--exclude", "a")  # replaces the defaults
    assert _checked(out) == ["ws/.hidden", "ws/b"]
    _, out, _ = run(capsys, "ws", "--extend-exclude", "ws/b/pipelines/small.yaml")
    assert _checked(out) == ["ws/a"]
    _, out, _ = run(capsys, "ws/b/pipelines/small.yaml", "--extend-exclude", "b")
    assert _checked(out) == ["ws/b"]  # a file named on the command line is checked


def test_gitignore_is_honoured_unless_told_not_to(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _two_workspaces(tmp_path / "repo" / "ws")
    (tmp_path / "repo" / ".git").mkdir()  # the repository's root: its .gitignore applies
    (tmp_path / "repo" / ".gitignore").write_text("ws/b/\n", "utf-8")
    monkeypatch.chdir(tmp_path / "repo")
    _, out, _ = run(capsys, "ws")
    assert _checked(out) == ["ws/a"]
    _, out, _ = run(capsys, "ws", "--no-respect-gitignore")
    assert _checked(out) == ["ws/a", "ws/b"]
    # a deeper .gitignore: one pipeline file ignored, then taken back by a negation
    (tmp_path / "repo" / ".gitignore").write_text("", "utf-8")
    (tmp_path / "repo" / "ws" / "a" / ".gitignore").write_text("*.yaml\n", "utf-8")
    _, out, _ = run(capsys, "ws")
    assert _checked(out) == ["ws/b"]
    (tmp_path / "repo" / "ws" / "a" / "pipelines" / ".gitignore").write_text(
        "!small.yaml\n", "utf-8")
    _, out, _ = run(capsys, "ws")
    assert _checked(out) == ["ws/a", "ws/b"]


# ---------------------------------------------------------------------------- CI defaults
def test_the_pre_commit_hook_fails_on_a_warning_by_default(
        ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook's own entry and args, as pre-commit runs them, on a workspace whose only
    finding is a warning (essay's output 300 -> 200: 1050 - 100 = 950 <= 1000, it fits)."""
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    [hook] = [h for h in hooks if h["id"] == "budgetlens-check"]
    entry = hook["entry"].split()
    assert entry[:2] == ["budgetlens", "check"]
    pipeline = ws / "pipelines/small.yaml"
    pipeline.write_text(pipeline.read_text("utf-8").replace("max_output_tokens: 300",
                                                            "max_output_tokens: 200"), "utf-8")
    monkeypatch.chdir(ws)
    assert main([*entry[1:], *hook["args"], "--no-cache"]) == 1
    assert "0 errors, 1 warning" in capsys.readouterr().out
    assert main([*entry[1:], *hook["args"], "--fail-on", "error", "--no-cache"]) == 0


def test_the_action_passes_its_fail_on_to_check() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    assert action["inputs"]["fail-on"]["default"] == "warning"
    [step] = [s for s in action["runs"]["steps"] if s.get("id") == "check"]
    assert step["env"]["INPUT_FAIL_ON"] == "${{ inputs.fail-on }}"
    assert 'args=(--fail-on "$INPUT_FAIL_ON")' in step["run"]
