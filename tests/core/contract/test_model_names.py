"""Model names as users write them, in a check: an Ollama tag or a prefixed name takes its
registry entry's limits; an unknown one says what to run. Totals by hand: empty prompt,
overhead 10, context 1000, output 500, margin 90 = 1,600."""

from __future__ import annotations

from pathlib import Path

from budgetlens.codes import MODEL_UNKNOWN
from budgetlens.models import load_registry

from .helpers import check, make_workspace, only

DATE = load_registry().date


def _ws(tmp_path: Path, model: str, step_model: str | None = None) -> Path:
    own = f"    model: {step_model}\n" if step_model else ""
    make_workspace(tmp_path, config={"model": model, "format_overhead_tokens": 10},
                   pipelines={"p.yaml": "settings:\n  max_context_tokens: 1000\n"
                                        "  budget_safety_margin_tokens: 90\nsteps:\n"
                                        "  - id: answer\n    type: call_model\n"
                                        f"{own}    prompt_key: sys\n"
                                        "    max_output_tokens: 500\n"},
                   prompts={"sys.txt": ""})
    return tmp_path / "pipelines" / "p.yaml"


def test_an_ollama_tag_takes_its_models_limits(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, "llama3.1:8b"))
    assert report.diagnostics == []
    # llama-3.1-8b-instruct: 131,072 window, 16,384 output (registry.json)
    assert report.window is not None and report.window.value == 131_072
    assert report.window.source == f"model llama-3.1-8b-instruct (registry {DATE})"
    assert report.output_ceiling is not None and report.output_ceiling.value == 16_384


def test_a_prefixed_step_model_takes_its_models_limits(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, "gpt-4o", step_model="openai/gpt-4o-mini"))
    assert report.diagnostics == []
    [step] = report.steps
    assert step.window is not None
    assert step.window.source == f"model gpt-4o-mini (registry {DATE})"


def test_an_unknown_name_without_a_close_one_says_what_to_run(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, "gpt-4o", step_model="llama9:8b"))
    warning = only(report, MODEL_UNKNOWN)
    assert warning.message == (
        f"step model 'llama9:8b' is not in the model registry ({DATE}): the step is checked"
        " with the pipeline's limits; run `budgetlens models llama9` to find its name")
