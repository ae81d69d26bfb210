"""``budgetlens check`` and ``budgetlens clamp``: exit codes, JSON schema, text format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from budgetlens_cli.main import main
from tests.core.contract.helpers import make_workspace

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUDGET_KEYS = {"system_prompt", "template", "format_overhead", "fixed", "history", "context",
               "output", "output_source", "margin", "total", "window", "headroom"}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of examples/ as ./ws (relative paths, as a user types them)."""
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    return Path("ws")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_examples_fail_with_one_error_and_compiler_style_text(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "ws")
    assert code == 1
    lines = out.splitlines()
    head = "ws/pipelines/long_report.yaml:15:9: error[BL050] step 'write_report' does not fit"
    i = next(n for n, line in enumerate(lines) if line.startswith(head))
    assert lines[i + 1] == "   15 |   - id: write_report"
    assert lines[i + 2] == "      |         ^^^^^^^^^^^^"
    assert "  step             fixed   history   context    output    margin     total" \
           "    window  headroom  fits" in lines
    assert lines[-1] == "5 pipelines, 8 call_model steps (1 not fitting): 1 error, 0 warnings"


def test_json_output_has_exactly_the_documented_schema(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "ws", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert set(doc) == {"version", "diagnostics", "steps"} and doc["version"] == 1
    (diag,) = doc["diagnostics"]
    assert set(diag) == {"file", "range", "severity", "code", "message", "pipeline", "step",
                         "related"}
    assert diag["file"] == "ws/pipelines/long_report.yaml"
    assert diag["range"] == {"start": {"line": 14, "character": 8},
                             "end": {"line": 14, "character": 20}}
    assert (diag["severity"], diag["code"], diag["step"]) == ("error", "BL050", "write_report")
    # every call_model step of every pipeline, fitting or not
    assert [(s["pipeline"], s["step"]) for s in doc["steps"]] == [
        ("ws/pipelines/base.yaml", "route"), ("ws/pipelines/base.yaml", "answer"),
        ("ws/pipelines/chat.yaml", "chat"),
        ("ws/pipelines/long_report.yaml", "outline"),
        ("ws/pipelines/long_report.yaml", "write_report"),
        ("ws/pipelines/multilingual.yaml", "answer_ja"),
        ("ws/pipelines/support.yaml", "route"), ("ws/pipelines/support.yaml", "answer")]
    for step in doc["steps"]:
        # "injection" is present exactly for the pipeline with a settings.injection block.
        with_policy = step["pipeline"] == "ws/pipelines/support.yaml"
        assert set(step) == {"pipeline", "step", "fits", "budget", "terms"} | (
            {"injection"} if with_policy else set())
        assert set(step["budget"]) == BUDGET_KEYS
        b = step["budget"]
        assert b["fixed"] == b["system_prompt"] + b["template"] + b["format_overhead"]
        assert b["total"] == b["fixed"] + b["history"] + b["context"] + b["output"] + b["margin"]
        assert b["headroom"] == b["window"] - b["total"]
        assert step["fits"] == (b["headroom"] >= 0)


def test_policy_override_turns_the_violation_into_a_warning(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "ws", "--policy", "auto_clamp", "--format", "json")
    assert code == 0
    (diag,) = json.loads(out)["diagnostics"]
    assert diag["severity"] == "warning"
    assert "auto_clamp lowers max_context_tokens 6144 ->" in diag["message"]


def test_environment_policy_is_honoured(ws: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_LIMITS_POLICY", "auto_clamp")
    assert _run(capsys, "check", "ws")[0] == 0


def test_a_single_fitting_pipeline_exits_zero(ws: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "ws/pipelines/support.yaml")
    assert code == 0
    assert out.splitlines()[-1] == ("1 pipeline, 2 call_model steps (0 not fitting): 0 errors,"
                                    " 0 warnings")


def test_sarif_output(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "ws", "--format", "sarif")
    assert code == 1
    doc = json.loads(out)
    assert doc["version"] == "2.1.0"
    (result,) = doc["runs"][0]["results"]
    assert result["ruleId"] == "BL050" and result["level"] == "error"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (15, 9)
    assert [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]] == ["BL050"]


@pytest.mark.parametrize("argv", [
    ["check", "no/such/path"],
    ["check", "ws", "--policy", "sometimes"],
    ["check", "ws", "--format", "xml"],
    ["clamp", "ws", "--diff", "--write"],
    ["check", "ws", "--tokenizer", "no-such-encoding"],
    ["check", "ws", "--config", "ws/missing.json"],
])
def test_bad_usage_exits_two(ws: Path, capsys: pytest.CaptureFixture[str],
                             argv: list[str]) -> None:
    assert _run(capsys, *argv)[0] == 2


def test_a_folder_without_pipelines_is_bad_usage(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "check", str(tmp_path))
    assert code == 2 and "no pipelines" in err


def test_caret_is_as_wide_as_the_cjk_text_it_marks(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    make_workspace(tmp_path, config={"model_context_window": 4000, "model_max_tokens": 10},
                   prompts={"s.txt": "x"}, pipelines={"p.yaml": (
                       "settings: {max_context_tokens: 100}\n"
                       "steps:\n"
                       "  - {id: 質問, type: call_model, prompt_key: s,"
                       " user_parts: {template: '予算 {q'}}\n")})
    code, out, _ = _run(capsys, "check", str(tmp_path / "pipelines" / "p.yaml"))
    assert code == 1
    lines = out.splitlines()
    i = next(n for n, line in enumerate(lines) if "error[BL043]" in line)
    source, caret = lines[i + 1], lines[i + 2]
    prefix = "  - {id: 質問, type: call_model, prompt_key: s, user_parts: {template: '予算 "
    assert source == "    3 | " + prefix + "{q'}}"
    # two wide characters twice: each takes two columns on screen
    assert caret == "      | " + " " * (len(prefix) + 4) + "^"


def test_clamp_lists_diffs_and_writes_the_plan(ws: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "ws/pipelines/long_report.yaml", "--format", "json")
    budget = json.loads(out)["steps"][1]["budget"]
    expected = budget["window"] - (budget["fixed"] + budget["history"] + budget["output"]
                                   + budget["margin"])
    code, out, _ = _run(capsys, "clamp", "ws")
    assert code == 0
    assert out.splitlines()[0].startswith(
        f"ws/pipelines/long_report.yaml:5:23: settings.max_context_tokens 6144 -> {expected}:")
    original = (ws / "pipelines" / "long_report.yaml").read_text()
    code, out, _ = _run(capsys, "clamp", "ws", "--diff")
    assert code == 1  # issue 35: changes pending, as `ruff format --diff` (was 0)
    assert f"-  max_context_tokens: 6144\n+  max_context_tokens: {expected}\n" in out
    assert (ws / "pipelines" / "long_report.yaml").read_text() == original  # --diff writes nothing
    code, out, _ = _run(capsys, "clamp", "ws", "--write")
    assert code == 0
    assert (ws / "pipelines" / "long_report.yaml").read_text() == original.replace(
        "max_context_tokens: 6144", f"max_context_tokens: {expected}")
    assert _run(capsys, "check", "ws")[0] == 0
    code, out, _ = _run(capsys, "clamp", "ws")
    assert out.splitlines()[-1] == "0 changes planned in 0 files"


def test_clamp_edit_parent_changes_the_base(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    make_workspace(tmp_path, config={"model_context_window": 2000, "model_max_tokens": 500},
                   prompts={"s.txt": "x"}, pipelines={
                       "base.yaml": "settings:\n  max_context_tokens: 1800\nsteps:\n"
                                    "  - {id: a, type: call_model, prompt_key: s}\n",
                       "child.yaml": "extends: base.yaml\n"})
    child = str(tmp_path / "pipelines" / "child.yaml")
    code, _, _ = _run(capsys, "clamp", child, "--edit-parent", "--write")
    assert code == 0
    assert (tmp_path / "pipelines" / "child.yaml").read_text() == "extends: base.yaml\n"
    assert "max_context_tokens: 1800" not in (tmp_path / "pipelines" / "base.yaml").read_text()


def test_clamp_exits_one_when_a_step_can_never_fit(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    make_workspace(tmp_path, config={"model_context_window": 100, "model_max_tokens": 5},
                   prompts={"s.txt": "word " * 200}, pipelines={
                       "p.yaml": "settings: {max_context_tokens: 10}\nsteps:\n"
                                 "  - {id: a, type: call_model, prompt_key: s}\n"})
    assert _run(capsys, "clamp", str(tmp_path))[0] == 1


def test_violation_notes_say_where_every_term_comes_from(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "check", "ws", "--no-table")
    notes = [line.strip() for line in out.splitlines() if line.startswith("      = ")]
    assert "= context: 6144 at ws/pipelines/long_report.yaml:5:23" in notes
    assert "= margin: 128 (inherited) at ws/pipelines/base.yaml:5:32" in notes
    assert "= window: 8192 at ws/config.json:2:27" in notes
    assert any(n.startswith("= system_prompt: ") and n.endswith(" at ws/prompts/report.txt:1:1")
               for n in notes)


def test_injection_split_is_reported_for_a_pipeline_with_a_policy(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # examples/pipelines/support.yaml: absolute 2000, 20% of what is left, shares 0.4/0.6.
    code, out, _ = _run(capsys, "check", "ws/pipelines/support.yaml", "--format", "json")
    assert code == 0
    steps = json.loads(out)["steps"]
    assert len(steps) == 2
    for step in steps:
        b = step["budget"]
        remaining = b["window"] - b["fixed"] - b["history"]
        total = min(2000, (remaining * 20) // 100)
        cards, buckets = max(500, total * 4 // 10), max(500, total * 6 // 10)
        assert cards + buckets <= total
        inj = step["injection"]["budget"]
        assert (inj["total_budget"], inj["knowledge_card_budget"], inj["bucket_budget"]) == (
            total, cards, buckets)
        assert step["injection"]["label"] == (
            f"injection {total:,}: cards {cards:,} · buckets {buckets:,}")
    code, out, _ = _run(capsys, "check", "ws/pipelines/support.yaml")
    assert f"  answer: {steps[1]['injection']['label']}\n" in out
