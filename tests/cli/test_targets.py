"""``budgetlens check --target``: the matrix of every step against every target model, in
text, JSON and SARIF. The prompts are empty and the format overhead is 10, so each total is
10 + context 7000 + output + margin 90, by hand: small 7,200, big 16,100 (gpt-4's window is
8,192: 7,908 over); step ``big`` starts on line 9."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetlens.models import load_registry
from budgetlens.source import unique_diagnostics
from budgetlens_cli import check_cmd, check_formats, check_run
from budgetlens_cli.main import main
from tests.workspaces.models import enter, model_workspace

PIPELINE = """\
settings:
  max_context_tokens: 7000
  budget_safety_margin_tokens: 90
steps:
  - id: small
    type: call_model
    prompt_key: sys
    max_output_tokens: 100
  - id: big
    type: call_model
    prompt_key: sys
    max_output_tokens: 9000
"""
TARGETS = ("--target", "gpt-4o", "--target", "gpt-4", "--target", "claude-sonnet-4-5")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    model_workspace(tmp_path, {"model": "gpt-4o", "format_overhead_tokens": 10}, PIPELINE)
    return enter(tmp_path, monkeypatch)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_text_shows_one_column_per_target(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "check", ".", *TARGETS)
    assert code == 0  # not fitting a target is a warning
    assert (
        "pipelines/p.yaml: targets (✓ fits: total / window; ≈ approximate count)\n"
        "  step   gpt-4o              gpt-4            claude-sonnet-4-5\n"
        "  small  ✓ 7,200 / 128,000   ✓ 7,200 / 8,192  ✓ ≈7,200 / 200,000\n"
        "  big    ✓ 16,100 / 128,000  ✗ 7,908 over     ✓ ≈16,100 / 200,000\n"
        "  gpt-4o: window 128,000 · output ceiling 16,384 · tokenizer o200k_base (exact)\n"
        "  gpt-4: window 8,192 · output ceiling 8,192 · tokenizer cl100k_base (exact)\n"
        "  claude-sonnet-4-5: window 200,000 · output ceiling 64,000 · tokenizer"
        " claude_approx (approximate ≈)\n\n") in out
    assert ("pipelines/p.yaml:9:9: warning[BL063] step 'big' does not fit target gpt-4:"
            " total 16,100 > window 8,192 (7,908 over)") in out
    assert out.rstrip().endswith("1 pipeline, 2 call_model steps (0 not fitting): 0 errors,"
                                 " 1 warning")


def _fit(target: str, step: str, total: int, window: int, output: int, ceiling: int,
         tokenizer: str, approximate: bool = False) -> dict[str, Any]:
    return {"target": target, "step": step, "fits": total <= window and output <= ceiling,
            "total": total, "window": window, "headroom": window - total, "output": output,
            "ceiling": ceiling, "tokenizer": tokenizer, "approximate": approximate}


def test_json_lists_every_step_against_every_target(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "check", ".", "--format", "json", *TARGETS)
    assert code == 0
    data = json.loads(out)
    assert data["targets"] == [{
        "pipeline": "pipelines/p.yaml",
        "targets": ["gpt-4o", "gpt-4", "claude-sonnet-4-5"],
        "fits": [
            _fit("gpt-4o", "small", 7200, 128000, 100, 16384, "o200k_base"),
            _fit("gpt-4", "small", 7200, 8192, 100, 8192, "cl100k_base"),
            _fit("claude-sonnet-4-5", "small", 7200, 200000, 100, 64000, "claude_approx",
                 True),
            _fit("gpt-4o", "big", 16100, 128000, 9000, 16384, "o200k_base"),
            _fit("gpt-4", "big", 16100, 8192, 9000, 8192, "cl100k_base"),
            _fit("claude-sonnet-4-5", "big", 16100, 200000, 9000, 64000, "claude_approx",
                 True),
        ]}]
    assert [d["code"] for d in data["diagnostics"]] == ["BL063"]
    # the pipeline's own check is unchanged: gpt-4o's window
    assert [s["budget"]["window"] for s in data["steps"]] == [128000, 128000]


def test_sarif_carries_misfits_as_results_and_the_matrix(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "check", ".", "--format", "sarif", *TARGETS)
    assert code == 0
    run = json.loads(out)["runs"][0]
    [result] = run["results"]
    assert result["ruleId"] == "BL063" and result["level"] == "warning"
    assert result["properties"] == {"pipeline": "pipelines/p.yaml", "step": "big"}
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (9, 9)
    [rule] = run["tool"]["driver"]["rules"]
    assert rule["id"] == "BL063"
    [matrix] = run["properties"]["targets"]
    assert len(matrix["fits"]) == 6


def test_config_targets_are_used_without_the_option(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = json.loads((ws / "config.json").read_text("utf-8"))
    (ws / "config.json").write_text(json.dumps({**config, "targets": ["gpt-4", "gpt4o"]}),
                                    "utf-8")
    code, out = _run(capsys, "check", ".", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["targets"][0]["targets"] == ["gpt-4"]
    unknown = [d for d in data["diagnostics"] if d["code"] == "BL061"]
    assert [d["message"] for d in unknown] == [
        f"target 'gpt4o' is not in the model registry ({load_registry().date}); did you mean"
        " 'gpt-4o'?"]
    assert unknown[0]["file"] == "config.json"


def test_an_unknown_target_option_is_bad_usage(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", ".", "--target", "lama-3.1-8b-instruct"])
    err = capsys.readouterr().err
    assert code == 2
    assert "did you mean 'llama-3.1-8b-instruct'?" in err


def test_without_targets_the_output_has_no_matrix(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "check", ".", "--format", "json")
    assert code == 0
    assert "targets" not in json.loads(out)


def test_text_and_json_say_where_the_window_comes_from_and_mark_approximation(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "config.json").write_text(json.dumps(
        {"model": "llama-3.1-8b-instruct", "format_overhead_tokens": 10,
         "serving": {"num_ctx": 8192}}, indent=2), "utf-8")
    date = load_registry().date
    code, out = _run(capsys, "check", ".")
    assert code == 0  # auto_clamp: the misfit is a warning
    assert ("= window: 8192 from config.json serving.num_ctx (below 131072 from model"
            f" llama-3.1-8b-instruct (registry {date})) at config.json:5:16") in out
    assert ("pipelines/p.yaml: window 8192, policy auto_clamp (default (not development)),"
            " tokenizer llama3, model llama-3.1-8b-instruct") in out
    code, out = _run(capsys, "check", ".", "--format", "json")
    steps = json.loads(out)["steps"]
    # Llama 3 counts exactly (the llama3 family, budgetlens[llama]): no "approximate" key
    assert [(s["step"], "approximate" in s, s["budget"]["window"]) for s in steps] == [
        ("small", False, 8192), ("big", False, 8192)]
    (ws / "config.json").write_text(json.dumps(
        {"model": "claude-sonnet-4-5", "format_overhead_tokens": 10}, indent=2), "utf-8")
    code, out = _run(capsys, "check", ".")
    assert ("tokenizer claude_approx, model claude-sonnet-4-5 (≈ approximate counts)") in out
    code, out = _run(capsys, "check", ".", "--format", "json")
    assert [s["approximate"] for s in json.loads(out)["steps"]] == [True, True]
    assert steps[1]["terms"]["window"]["source"] == (
        f"config.json serving.num_ctx (below 131072 from model llama-3.1-8b-instruct"
        f" (registry {date}))")


def test_the_json_text_of_rendered_steps_is_the_json_of_its_data(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``check_formats.json_text`` places the steps rendered at check time (``RawJSON``, a
    speed trick); its bytes are those of ``json.dumps`` of the document as data."""
    code, out = _run(capsys, "check", ".", "--no-cache", "--format", "json", *TARGETS)
    assert code == 0 and '"targets"' in out
    pipelines = check_cmd.collect_pipelines(["."])
    results, _ = check_run.check_results(pipelines, check_run.CheckSpec().options, "steps",
                                         targets=["gpt-4o", "gpt-4", "claude-sonnet-4-5"])
    matrices = [r.matrix for r in results if r.matrix is not None]
    diagnostics = unique_diagnostics([*(d for r in results for d in r.diagnostics),
                                      *(d for m in matrices for d in m.diagnostics)])
    document = check_formats.json_output(results, diagnostics, matrices)
    assert out == json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    assert check_formats.json_text(results, diagnostics, matrices) + "\n" == out
