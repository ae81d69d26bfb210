"""models.json: a workspace's or user's corrections and additions to the registry, with
their provenance, checked at the value. Expected numbers are written by hand: the prompts
are empty and the overhead is set, so a step's total is 10 + context + output + 90."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from budgetlens.codes import CONTRACT_VIOLATION, MODEL_UNKNOWN, MODELS_FILE_INVALID, NEAR_MISS_KEY
from budgetlens.source import Severity

from .helpers import check, codes_of, make_workspace

MODELS = """{
  "models": {
    "gpt-4o": {"window": 1500}
  }
}
"""


def _ws(tmp_path: Path, config: dict[str, Any], models: str | None = None,
        steps: str = "") -> Path:
    steps = steps or "  - id: answer\n    type: call_model\n    prompt_key: sys\n" \
                     "    max_output_tokens: 500\n"
    make_workspace(tmp_path, config={"format_overhead_tokens": 10, **config},
                   pipelines={"p.yaml": "settings:\n  max_context_tokens: 1000\n"
                                        f"  budget_safety_margin_tokens: 90\nsteps:\n{steps}"},
                   prompts={"sys.txt": ""})
    if models is not None:
        (tmp_path / "models.json").write_text(models, "utf-8")
    return tmp_path / "pipelines" / "p.yaml"


def test_a_workspace_models_json_lowers_a_window_and_says_so(tmp_path: Path) -> None:
    pipeline = _ws(tmp_path, {"model": "gpt-4o"})
    assert check(pipeline).diagnostics == []  # 1,600 fits gpt-4o's 128,000
    (tmp_path / "models.json").write_text(MODELS, "utf-8")
    report = check(pipeline)
    assert codes_of(report) == [CONTRACT_VIOLATION]  # 10 + 1000 + 500 + 90 = 1600 > 1500
    assert report.window is not None and report.window.value == 1500
    # "window": 1500 is on line 3, its value at column 26 (1-based)
    assert report.window.source == "model gpt-4o (models.json:3:26)"
    assert report.window.location is not None
    assert report.window.location.file == str(tmp_path / "models.json")
    # the registry's output ceiling (16,384) is above the lowered window: not used
    assert report.output_ceiling is None
    assert str(tmp_path / "models.json") in report.inputs


def test_the_user_file_is_read_and_the_workspace_file_wins(tmp_path: Path) -> None:
    user = tmp_path / "xdg" / "budgetlens"
    user.mkdir(parents=True)
    (user / "models.json").write_text(json.dumps(
        {"models": {"gpt-4o": {"window": 1400, "max_output": 300},
                    "my-finetune": {"window": 4096, "max_output": 1024,
                                    "tokenizer": "llama3"}}}), "utf-8")
    ws = tmp_path / "ws"
    pipeline = _ws(ws, {"model": "gpt-4o"}, models='{"models": {"gpt-4o": {"window": 2000}}}')
    report = check(pipeline, environ={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert report.window is not None and report.window.value == 2000  # the workspace's
    assert report.output_ceiling is not None and report.output_ceiling.value == 300  # user's
    assert report.output_ceiling.source.startswith("model gpt-4o (models.json:1:")
    assert report.output_ceiling.location is not None
    assert report.output_ceiling.location.file == str(user / "models.json")
    # a model only the user's file knows
    (ws / "config.json").write_text(json.dumps({"format_overhead_tokens": 10,
                                                "model": "my-finetune"}), "utf-8")
    report = check(pipeline, environ={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert MODEL_UNKNOWN not in codes_of(report)
    assert report.window is not None and report.window.value == 4096


def test_config_json_may_name_the_file(tmp_path: Path) -> None:
    pipeline = _ws(tmp_path, {"model": "gpt-4o", "models_file": "limits/ours.json"})
    (tmp_path / "limits").mkdir()
    (tmp_path / "limits" / "ours.json").write_text(MODELS, "utf-8")
    report = check(pipeline)
    assert report.window is not None and report.window.value == 1500
    assert report.window.source == "model gpt-4o (ours.json:3:26)"


def test_bad_values_are_errors_at_the_value(tmp_path: Path) -> None:
    pipeline = _ws(tmp_path, {"model": "gpt-4o"}, models="""{
  "models": {
    "gpt-4o": {"window": 0, "max_ouput": 100},
    "new-model": {"max_output": 100},
    "gpt-4o-mini": {"max_output": 200000, "tokenizer": "klingon"}
  }
}
""")
    report = check(pipeline)
    # (0-based line, character): at each value; a misspelt key at its text inside the quotes
    found = sorted((d.range.start.line, d.range.start.character, d.code, d.message)
                   for d in report.diagnostics if d.file.endswith("models.json"))
    assert found == [
        (2, 25, MODELS_FILE_INVALID, "models.json models.gpt-4o.window must be a whole"
                                     " number > 0, got 0; the registry's value is used"),
        (2, 29, NEAR_MISS_KEY, "unknown key 'max_ouput': did you mean 'max_output'? (a"
                               " limit the file does not set: the registry's is used)"),
        (3, 17, MODELS_FILE_INVALID, "models.json models.new-model is not in the model"
                                     " registry and sets no window: a new model needs one"),
        (4, 34, MODELS_FILE_INVALID, "models.json models.gpt-4o-mini.max_output 200,000 is"
                                     " above the window 128,000: not used"),
        (4, 55, MODELS_FILE_INVALID, "models.json models.gpt-4o-mini.tokenizer must be one of"
                                     " o200k_base, cl100k_base, llama3, llama4, qwen,"
                                     " deepseek, mistral, claude, gemini, unknown, got"
                                     " 'klingon'; the registry's value is used"),
    ]
    assert all(d.severity is Severity.ERROR for d in report.diagnostics
               if d.file.endswith("models.json"))
    # the bad window is not used: gpt-4o keeps its registry window
    assert report.window is not None and report.window.value == 128_000


def test_a_file_that_is_not_json_is_one_error(tmp_path: Path) -> None:
    pipeline = _ws(tmp_path, {"model": "gpt-4o"}, models='{"models": {"gpt-4o": }}')
    report = check(pipeline)
    [bad] = [d for d in report.diagnostics if d.code == MODELS_FILE_INVALID]
    assert bad.message.startswith("models.json is not valid JSON: Expecting value")
    assert report.window is not None and report.window.value == 128_000
