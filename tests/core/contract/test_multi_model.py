"""Multi-model pipelines (issue 32): serving per step and per model, a step's own context
and history, gateways and variants, proportional margins.

Every workspace has empty prompt files and ``format_overhead_tokens: 10``, so a step's
fixed part is 10 tokens and each total is worked out by hand in the test:
``10 + history + context + output + margin``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from budgetlens import codes
from budgetlens.contract.plan import clamp_plan
from budgetlens.contract.results import PipelineReport, StepBudget
from budgetlens.files import DiskFiles
from tests.core.contract.helpers import check, codes_of, make_workspace

LLAMA = "llama3.1:8b"  # an Ollama tag: the registry's llama-3.1-8b-instruct, window 131,072


def _ws(root: Path, config: dict[str, Any], pipeline: str) -> Path:
    make_workspace(root, config={"format_overhead_tokens": 10, **config},
                   pipelines={"p.yaml": pipeline}, prompts={"sys.txt": ""})
    return root / "pipelines" / "p.yaml"


def _step(report: PipelineReport, name: str) -> StepBudget:
    return next(s for s in report.steps if s.step == name)


def _of(report: PipelineReport, code: str) -> list[Any]:
    return [d for d in report.diagnostics if d.code == code]


ROUTER_ANSWER = f"""\
settings:
  max_context_tokens: 6000
  budget_safety_margin_tokens: 90
steps:
  - id: router
    type: call_model
    model: {LLAMA}
    prompt_key: sys
    max_output_tokens: 500
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 2000
"""


def test_only_the_llama_step_is_limited_by_its_serving(tmp_path: Path) -> None:
    path = _ws(tmp_path, {"model": "gpt-4o", "serving": {LLAMA: {"num_ctx": 8192}}},
               ROUTER_ANSWER)
    report = check(path)
    router, answer = _step(report, "router"), _step(report, "answer")
    # router: 10 + 6000 + 500 + 90 = 6,600 in Ollama's num_ctx 8,192
    assert (router.window.value, router.total, router.headroom) == (8192, 6600, 1592)
    assert router.window.source.startswith(f"config.json serving[{LLAMA!r}].num_ctx")
    assert "131072 from model llama-3.1-8b-instruct" in router.window.source
    # answer: 10 + 6000 + 2000 + 90 = 8,100 in gpt-4o's 128,000, not the Llama server's
    assert (answer.window.value, answer.total) == (128000, 8100)
    assert answer.window.source.startswith("model gpt-4o")
    assert report.window is not None and report.window.value == 128000
    assert codes_of(report) == []


def test_serving_precedence_step_over_model_over_workspace(tmp_path: Path) -> None:
    pipeline = f"""\
settings:
  max_context_tokens: 1000
  budget_safety_margin_tokens: 90
steps:
  - id: by_model
    type: call_model
    model: {LLAMA}
    prompt_key: sys
    max_output_tokens: 100
  - id: by_step
    type: call_model
    model: {LLAMA}
    serving: {{num_ctx: 16384}}
    prompt_key: sys
    max_output_tokens: 100
  - id: by_workspace
    type: call_model
    prompt_key: sys
    max_output_tokens: 100
"""
    path = _ws(tmp_path, {"model": "gpt-4o",
                          "serving": {"num_ctx": 4096, LLAMA: {"num_ctx": 8192}}}, pipeline)
    report = check(path)
    windows = {s.step: (s.window.value, s.window.source.split(" (")[0]) for s in report.steps}
    assert windows == {
        "by_model": (8192, f"config.json serving[{LLAMA!r}].num_ctx"),
        "by_step": (16384, "pipeline steps[1].serving.num_ctx"),
        "by_workspace": (4096, "config.json serving.num_ctx"),
    }
    # every step: 10 + 1000 + 100 + 90 = 1,200
    assert {s.total for s in report.steps} == {1200}


def test_a_near_miss_inside_a_step_or_model_serving_block_is_an_error(tmp_path: Path) -> None:
    pipeline = ROUTER_ANSWER.replace("    max_output_tokens: 500\n",
                                     "    max_output_tokens: 500\n    serving: {num_cxt: 4096}\n")
    path = _ws(tmp_path, {"model": "gpt-4o", "serving": {LLAMA: {"num_ct": 8192}}}, pipeline)
    report = check(path)
    misses = [(d.file.rsplit("/", 1)[-1], d.severity.value, d.message.split(":")[0])
              for d in _of(report, codes.NEAR_MISS_KEY)]
    assert ("p.yaml", "error", "unknown key 'num_cxt'") in misses
    assert ("config.json", "error", "unknown key 'num_ct'") in misses
    # neither limit applies: the router keeps the model's window
    assert _step(report, "router").window.value == 131072


# ---------------------------------------------------------------- context per step
def _router_pipeline(router_extra: str, *, router_output: int = 300) -> str:
    return f"""\
settings:
  max_context_tokens: 100000
  budget_safety_margin_tokens: 90
steps:
  - id: router
    type: call_model
    model: {LLAMA}
    prompt_key: sys
    max_output_tokens: {router_output}
{router_extra}  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 4000
"""


def test_one_8k_step_forced_bl052_before_use_context_false(tmp_path: Path) -> None:
    config = {"model": "gpt-4o", "serving": {LLAMA: {"num_ctx": 8192}}}
    before = check(_ws(tmp_path / "a", config, _router_pipeline("")),
                   policy="auto_clamp")
    assert codes.CANNOT_FIT in codes_of(before)  # the case: the clamp refuses
    report = check(_ws(tmp_path / "b", config,
                       _router_pipeline("    use_context: false\n")), policy="auto_clamp")
    router, answer = _step(report, "router"), _step(report, "answer")
    # router: 10 + context 0 + 300 + 90 = 400; answer: 10 + 100,000 + 4,000 + 90 = 104,100
    assert (router.context.value, router.context.source, router.total) == \
        (0, "use_context: false", 400)
    assert (answer.context.value, answer.total, answer.window.value) == (100000, 104100, 128000)
    assert codes_of(report) == [] and report.clamp.empty


def test_a_step_of_its_own_context_has_only_its_output_clamped(tmp_path: Path) -> None:
    config = {"model": "gpt-4o", "serving": {LLAMA: {"num_ctx": 8192}}}
    path = _ws(tmp_path, config, _router_pipeline("    max_context_tokens: 7000\n",
                                                  router_output=1500))
    report = check(path, policy="auto_clamp")
    router = _step(report, "router")
    # 10 + 7000 + 1500 + 90 = 8,600 > 8,192: over by 408
    assert (router.context.value, router.total, router.headroom) == (7000, 8600, -408)
    assert router.context.source == "steps[0].max_context_tokens"
    [violation] = _of(report, codes.CONTRACT_VIOLATION)
    assert violation.step == "router"
    # the pipeline's 100,000 stays; the router's output goes to 8192 - 10 - 90 - 7000 = 1,092
    assert report.clamp.context_after is None
    assert [(c.step, c.before, c.after) for c in report.clamp.outputs] == \
        [("router", 1500, 1092)]
    plan = clamp_plan(report, files=DiskFiles())
    assert [(c.key, c.after) for c in plan.changes] == [("steps[0].max_output_tokens", 1092)]


def test_a_step_of_its_own_history(tmp_path: Path) -> None:
    pipeline = """\
settings:
  max_context_tokens: 1000
  max_history_tokens: 3000
  budget_safety_margin_tokens: 90
steps:
  - id: short
    type: call_model
    prompt_key: sys
    use_history: true
    max_history_tokens: 200
    max_output_tokens: 100
  - id: long
    type: call_model
    prompt_key: sys
    use_history: true
    max_output_tokens: 100
"""
    report = check(_ws(tmp_path, {"model": "gpt-4o"}, pipeline))
    # short: 10 + 200 + 1000 + 100 + 90 = 1,400; long: 10 + 3000 + 1000 + 100 + 90 = 4,200
    assert [(s.history.value, s.total) for s in report.steps] == [(200, 1400), (3000, 4200)]
    assert report.steps[0].history.source == "steps[0].max_history_tokens"


def test_a_wrong_step_context_value_is_bl005(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "gpt-4o"},
                       _router_pipeline("    use_context: 'no'\n")))
    [bad] = _of(report, codes.INVALID_VALUE)
    assert bad.message.startswith("use_context of step 'router' must be true or false")
    assert _step(report, "router").context.value == 100000


# -------------------------------------------------------------- gateways, variants
GATEWAY_PIPELINE = """\
settings:
  max_context_tokens: 7000
  budget_safety_margin_tokens: 90
steps:
  - id: fits
    type: call_model
    prompt_key: sys
    max_output_tokens: 100
  - id: big
    type: call_model
    prompt_key: sys
    max_context_tokens: 9000
    max_output_tokens: 100
  - id: mini
    type: call_model
    model: o1-mini
    prompt_key: sys
    max_context_tokens: 3950
    max_output_tokens: 100
  - id: elsewhere
    type: call_model
    gateway: github-model
    prompt_key: sys
    max_output_tokens: 100
"""


def test_a_request_over_the_gateway_cap(tmp_path: Path) -> None:
    path = _ws(tmp_path, {"model": "gpt-4o", "gateway": "github-models"}, GATEWAY_PIPELINE)
    report = check(path)
    caps = sorted((d.step, d.message) for d in _of(report, codes.GATEWAY_CAP))
    source = "https://github.com/actions/ai-inference/issues/128"
    # big: 10 + 9000 + 90 = 9,100 > 8,000; mini (o1-mini): 10 + 3950 + 90 = 4,050 > 4,000;
    # fits: 10 + 7000 + 90 = 7,100 <= 8,000
    assert caps == [
        ("big", "step 'big' sends 9,100 input tokens (fixed 10 + history 0 + context 9,000"
                f" + margin 90), above the 8,000-token request cap of gateway github-models"
                f" ({source}, recorded 2026-12-06) (over by 1,100)"),
        ("mini", "step 'mini' sends 4,050 input tokens (fixed 10 + history 0 + context 3,950"
                 f" + margin 90), above the 4,000-token request cap of gateway github-models"
                 f" ({source}, recorded 2026-12-06) (over by 50)")]
    assert all(d.severity.value == "error" for d in _of(report, codes.GATEWAY_CAP))
    [unknown] = _of(report, codes.GATEWAY_UNKNOWN)
    assert unknown.step == "elsewhere" and "gateway 'github-model' is not in the gateway" \
        " table (gateways: copilot-api, github-models)" in unknown.message
    assert _step(report, "fits").gateway_cap is not None
    assert _step(report, "elsewhere").gateway_cap is None


def test_a_gateway_without_a_sourced_cap_says_so(tmp_path: Path) -> None:
    path = _ws(tmp_path, {"model": "gpt-4.1", "gateway": "github-models"},
               GATEWAY_PIPELINE.split("  - id: big")[0])
    report = check(path)
    [note] = _of(report, codes.GATEWAY_UNKNOWN)
    assert note.severity.value == "information"
    assert "no recorded cap for gpt-4.1 (not yet sourced" in note.message
    assert codes.GATEWAY_CAP not in codes_of(report)


VARIANT_PIPELINE = """\
settings:
  max_context_tokens: 300000
  budget_safety_margin_tokens: 1000
steps:
  - id: long
    type: call_model
    prompt_key: sys
    max_output_tokens: 8000
"""


@pytest.mark.parametrize("where", ["config", "step"])
def test_claude_1m_variant(tmp_path: Path, where: str) -> None:
    plain = check(_ws(tmp_path / "plain", {"model": "claude-sonnet-4-5"}, VARIANT_PIPELINE),
                  policy="fail_fast")
    # 10 + 300,000 + 8,000 + 1,000 = 309,010 > 200,000 without the beta header
    assert (plain.steps[0].total, plain.steps[0].window.value) == (309010, 200000)
    assert codes.CONTRACT_VIOLATION in codes_of(plain)
    config: dict[str, Any] = {"model": "claude-sonnet-4-5"}
    pipeline = VARIANT_PIPELINE
    if where == "config":
        config["variant"] = "1m"
    else:
        pipeline = pipeline.replace("    prompt_key: sys\n", "    prompt_key: sys\n"
                                                            "    variant: 1m\n")
    report = check(_ws(tmp_path / where, config, pipeline), policy="fail_fast")
    step = report.steps[0]
    assert (step.total, step.window.value) == (309010, 1000000)
    assert step.window.source.startswith("variant 1m of claude-sonnet-4-5 (https://docs.")
    assert "context-1m-2025-08-07" in step.window.source
    assert codes_of(report) == []


def test_an_unknown_variant_keeps_the_registry_window(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "gpt-4o", "variant": "1m"}, VARIANT_PIPELINE))
    [unknown] = _of(report, codes.GATEWAY_UNKNOWN)
    assert "variant '1m' is not a variant of gpt-4o (variants: none recorded)" in \
        unknown.message
    assert report.steps[0].window.value == 128000


# ------------------------------------------------------------------- margins
MARGIN_PIPELINE = """\
settings:
  max_context_tokens: 10000
{margin}steps:
  - id: s
    type: call_model
    prompt_key: sys
    max_output_tokens: 500
"""


def test_a_proportional_margin(tmp_path: Path) -> None:
    pipeline = MARGIN_PIPELINE.format(margin='  budget_safety_margin_tokens: "2% + 128"\n')
    report = check(_ws(tmp_path, {"model": "gpt-4o"}, pipeline))
    step = report.steps[0]
    # input 10 + 10,000 = 10,010; 2% = 200.2, rounded up 201; + 128 = 329
    assert step.margin.value == 329
    assert step.total == 10010 + 500 + 329
    assert step.margin.source == ("settings.budget_safety_margin_tokens '2% + 128':"
                                  " 2% of input 10,010 = 201, + 128")
    assert codes_of(report) == []


def test_approximate_counts_get_a_proportional_margin_by_default(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "claude-sonnet-4-5"},
                       MARGIN_PIPELINE.format(margin="")))
    step = report.steps[0]
    # claude counts are approximate: 12% of 10,010 = 1,201.2, rounded up 1,202; + 128
    assert step.approximate and step.margin.value == 1330
    assert "(default for approximate counts): 12% of input 10,010" in step.margin.source
    exact = check(_ws(tmp_path / "exact", {"model": "gpt-4o"},
                      MARGIN_PIPELINE.format(margin="")))
    assert exact.steps[0].margin.value == 128  # exact counts keep the plain default
    fixed = check(_ws(tmp_path / "fixed", {"model": "claude-sonnet-4-5"},
                      MARGIN_PIPELINE.format(margin="  budget_safety_margin_tokens: 64\n")))
    assert fixed.steps[0].margin.value == 64  # a margin set is used as written


def test_a_margin_text_that_is_no_margin_is_bl005(tmp_path: Path) -> None:
    pipeline = MARGIN_PIPELINE.format(margin='  budget_safety_margin_tokens: "lots"\n')
    report = check(_ws(tmp_path, {"model": "gpt-4o"}, pipeline))
    [bad] = _of(report, codes.INVALID_VALUE)
    assert "got 'lots'; the default 128 is used" in bad.message
    assert report.steps[0].margin.value == 128


def test_the_config_models_own_serving_block_wins_over_the_workspace_keys(
        tmp_path: Path) -> None:
    config = {"model": LLAMA, "serving": {"num_ctx": 4096,
                                          "llama-3.1-8b-instruct": {"max_model_len": 16000}}}
    report = check(_ws(tmp_path, config, ROUTER_ANSWER.replace(f"    model: {LLAMA}\n", "")))
    # the block is keyed by the registry name; the config names the Ollama tag: one model
    assert report.window is not None and report.window.value == 16000
    [note] = _of(report, codes.SERVING_BINDS)
    assert note.message.startswith("serving['llama-3.1-8b-instruct'].max_model_len 16,000 is"
                                   " below llama-3.1-8b-instruct's window of 131,072 tokens")
    # router 10 + 6000 + 500 + 90 = 6,600; answer 10 + 6000 + 2000 + 90 = 8,100
    assert [(s.window.value, s.total) for s in report.steps] == [(16000, 6600), (16000, 8100)]


def test_a_near_miss_of_gateway_in_config_json_is_an_error(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "gpt-4o", "gatway": "github-models"},
                       GATEWAY_PIPELINE))
    [miss] = _of(report, codes.NEAR_MISS_KEY)
    assert miss.severity.value == "error"
    assert miss.message.startswith("unknown key 'gatway': did you mean 'gateway'?")


def test_a_variant_without_a_registry_model_is_bl068(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model_context_window": 8192, "variant": "1m"},
                       MARGIN_PIPELINE.format(margin="")))
    [unknown] = _of(report, codes.GATEWAY_UNKNOWN)
    assert "variant '1m' needs a registry model" in unknown.message
    assert report.steps[0].window.value == 8192
