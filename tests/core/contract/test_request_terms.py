"""A step's request terms (issue 32): tools, response_schema, reasoning, and max_input.

Every expected number is computed here by hand: the OpenAI counts follow the cookbook's
``num_tokens_for_tools`` written out below over the plain o200k_base encoding (tiktoken with
the shipped ranks), never budgetlens's framing code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from budgetlens import codes
from budgetlens.contract.results import PipelineReport, StepBudget
from budgetlens.tokens.core import get_tokenizer
from tests.core.contract.helpers import check, make_workspace, only

O200K = get_tokenizer("o200k_base")

WEATHER = {"type": "function", "function": {
    "name": "get_weather",
    "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city, e.g. Paris."},
        "unit": {"type": "string", "description": "The unit.", "enum": ["celsius", "fahrenheit"]},
    }, "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search_docs",
    "description": "Search the product documentation",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "description": "Words to look for."}}}}}
ANSWER_SCHEMA = {"title": "answer", "description": "The final answer.", "type": "object",
                 "properties": {"text": {"type": "string", "description": "The answer."},
                                "score": {"type": "number", "description": "Confidence."}}}


def n(text: str) -> int:
    return len(O200K.encode(text))


def cookbook_function(name: str, desc: str, props: dict[str, Any]) -> int:
    """OpenAI cookbook "How to count tokens with tiktoken", section 7, one function for
    gpt-4o: func_init 7, prop_init 3, prop_key 3, enum_init -3, enum_item 3."""
    total = 7 + n(f"{name}:{desc[:-1] if desc.endswith('.') else desc}")
    if props:
        total += 3
        for key, spec in props.items():
            total += 3
            if "enum" in spec:
                total += -3
                for item in spec["enum"]:
                    total += 3 + n(item)
            p_desc = spec["description"]
            p_desc = p_desc[:-1] if p_desc.endswith(".") else p_desc
            total += n(f"{key}:{spec['type']}:{p_desc}")
    return total


def cookbook_tools(tools: list[dict[str, Any]]) -> int:
    """The cookbook's count of a tools list: each function, then func_end 12."""
    return sum(cookbook_function(t["function"]["name"], t["function"]["description"],
                                 t["function"]["parameters"]["properties"])
               for t in tools) + 12


def workspace(root: Path, steps: list[dict[str, Any]], *, model: str = "gpt-4o",
              context: int = 1000, files: dict[str, Any] | None = None) -> Path:
    """A workspace with no prompt text and no format overhead: fixed is the new terms."""
    make_workspace(root, config={"model": model, "format_overhead_tokens": 0},
                   pipelines={"p.yaml": yaml.safe_dump(
                       {"settings": {"max_context_tokens": context,
                                     "budget_safety_margin_tokens": 100},
                        "steps": [{"type": "call_model", **s} for s in steps]},
                       sort_keys=False)})
    for name, value in (files or {}).items():
        (root / name).write_text(json.dumps(value), "utf-8")
    return root / "pipelines" / "p.yaml"


def step(report: PipelineReport, name: str) -> StepBudget:
    return next(s for s in report.steps if s.step == name)


def test_openai_tools_count_as_the_cookbook_formats_them(tmp_path: Path) -> None:
    pipe = workspace(tmp_path, [{"id": "a", "max_output_tokens": 500,
                                 "tools": [WEATHER, SEARCH]}])
    report = check(pipe)
    s = step(report, "a")
    expected = cookbook_tools([WEATHER, SEARCH])
    assert s.tools is not None and s.tools.value == expected
    assert not s.tools.source.startswith("≈")  # gpt-4o: the cookbook's own model
    assert s.fixed.value == expected  # no prompt, no template, no overhead
    assert s.total == expected + 1000 + 500 + 100


def test_tools_from_a_file_count_the_same_and_the_file_is_an_input(tmp_path: Path) -> None:
    pipe = workspace(tmp_path, [{"id": "a", "max_output_tokens": 500,
                                 "tools": {"file": "../tools.json"}}],
                     files={"tools.json": [WEATHER]})
    report = check(pipe)
    assert step(report, "a").tools.value == cookbook_tools([WEATHER])  # type: ignore[union-attr]
    assert str(tmp_path / "tools.json") in report.inputs
    (tmp_path / "tools.json").write_text(json.dumps([WEATHER, SEARCH]), "utf-8")
    again = check(pipe)
    assert step(again, "a").tools.value == cookbook_tools([WEATHER, SEARCH])  # type: ignore[union-attr]


def test_a_missing_or_broken_tools_file_is_bl045_at_the_value(tmp_path: Path) -> None:
    pipe = workspace(tmp_path, [{"id": "a", "max_output_tokens": 500,
                                 "tools": {"file": "../none.json"}},
                                {"id": "b", "max_output_tokens": 500,
                                 "response_schema": {"file": "../bad.json"}}])
    (tmp_path / "bad.json").write_text("{not json", "utf-8")
    report = check(pipe)
    found = [d for d in report.diagnostics if d.code == codes.TERM_FILE_UNREADABLE]
    assert [d.step for d in found] == ["a", "b"]
    assert "does not exist" in found[0].message and "not JSON" in found[1].message
    assert step(report, "a").tools is None


def test_openai_response_schema_counts_as_one_cookbook_function(tmp_path: Path) -> None:
    pipe = workspace(tmp_path, [{"id": "a", "max_output_tokens": 500,
                                 "response_schema": ANSWER_SCHEMA}])
    s = step(check(pipe), "a")
    # framing.py's schema rule: the schema as one function named by its title, its
    # properties the parameters, and the 12 closing tokens; ≈ (the cookbook has no rule)
    expected = cookbook_function("answer", "The final answer.",
                                 ANSWER_SCHEMA["properties"]) + 12
    assert s.response_schema is not None and s.response_schema.value == expected
    assert s.response_schema.source.startswith("≈")
    assert s.fixed.value == expected


def test_other_families_count_the_compact_json_and_are_approximate(tmp_path: Path) -> None:
    pipe = workspace(tmp_path, [{"id": "a", "max_output_tokens": 2000, "tools": [SEARCH]}],
                     model="claude-sonnet-4-0")
    s = step(check(pipe), "a")
    claude = get_tokenizer("claude_approx")
    compact = json.dumps(SEARCH, ensure_ascii=False, separators=(",", ":"))
    # Anthropic's tool-use system prompt: 530 at most (its pricing page), counted
    assert s.tools is not None and s.tools.value == claude.count(compact) + 530
    assert s.tools.source.startswith("≈") and "claude_approx" in s.tools.source


def test_reasoning_per_provider(tmp_path: Path) -> None:
    # fixed 0, context 1000, margin 100 in each: only output and reasoning move the total
    openai = workspace(tmp_path / "o", [{"id": "a", "max_output_tokens": 2000,
                                         "reasoning": 4000}], model="gpt-5")
    s = step(check(openai), "a")  # spent out of max_completion_tokens: beside the output
    assert (s.reasoning.value, s.total) == (4000, 1000 + 2000 + 4000 + 100)  # type: ignore[union-attr]
    claude = workspace(tmp_path / "c", [{"id": "a", "max_output_tokens": 8000,
                                         "reasoning": 4000}], model="claude-sonnet-4-0")
    s = step(check(claude), "a")  # thinking.budget_tokens counts toward max_tokens
    assert (s.reasoning_in_output, s.total) == (True, 1000 + 8000 + 100)
    gemini = workspace(tmp_path / "g", [{"id": "a", "max_output_tokens": 2000,
                                         "reasoning": 4000}], model="gemini-2.5-pro")
    s = step(check(gemini), "a")  # thinkingBudget beside the output
    assert s.total == 1000 + 2000 + 4000 + 100


def test_reasoning_that_does_not_suit_the_model_is_bl055_at_the_key(tmp_path: Path) -> None:
    claude = workspace(tmp_path / "c", [{"id": "small", "max_output_tokens": 8000,
                                         "reasoning": 512},
                                        {"id": "above", "max_output_tokens": 4000,
                                         "reasoning": 4000}], model="claude-sonnet-4-0")
    report = check(claude)
    found = [d for d in report.diagnostics if d.code == codes.REASONING_INVALID]
    assert [d.step for d in found] == ["small", "above"]
    assert "1,024" in found[0].message and "below the step's output limit" in found[1].message
    text = claude.read_text("utf-8").splitlines()
    assert all(text[d.range.start.line].strip().startswith("reasoning:") for d in found)
    # gpt-5: output ceiling 128,000; 120,000 visible + 10,000 reasoning is above it
    openai = workspace(tmp_path / "o", [{"id": "a", "max_output_tokens": 120000,
                                         "reasoning": 10000}], model="gpt-5")
    assert "130,000" in only(check(openai), codes.REASONING_INVALID).message


def test_gpt5_over_its_input_limit_but_inside_its_window_is_bl054(tmp_path: Path) -> None:
    # 280,000 + 100 margin = 280,100 input > 272,000; + 2,000 output fits 400,000
    pipe = workspace(tmp_path, [{"id": "a", "max_output_tokens": 2000}], model="gpt-5",
                     context=280000)
    report = check(pipe)
    s = step(report, "a")
    assert s.fits and s.max_input is not None and s.max_input.value == 272000
    diag = only(report, codes.INPUT_ABOVE_LIMIT)
    assert "280,100" in diag.message and "context 280,000" in diag.message
    assert "lower it by 8,100" in diag.message
    # 271,000 + 100 fits the input limit: no BL054
    ok = workspace(tmp_path / "ok", [{"id": "a", "max_output_tokens": 2000}], model="gpt-5",
                   context=271000)
    assert codes.INPUT_ABOVE_LIMIT not in [d.code for d in check(ok).diagnostics]


def test_a_near_miss_of_a_term_key_is_an_error(tmp_path: Path) -> None:
    pipe = workspace(tmp_path, [{"id": "a", "max_output_tokens": 500, "tool": [SEARCH]},
                                {"id": "b", "max_output_tokens": 500,
                                 "response_schema": {"fiel": "schema.json"}}])
    report = check(pipe)
    diag = only(report, codes.NEAR_MISS_KEY)
    assert diag.severity.value == "error" and "'tools'" in diag.message
    # {fiel: ...} is not taken for an inline schema of one property
    assert "did you mean 'file'?" in only(report, codes.INVALID_VALUE).message
    assert step(report, "b").response_schema is None


def test_the_budget_diff_names_a_changed_request_term(tmp_path: Path) -> None:
    from budgetlens.contract.diff import ChangeKind, DiffSide, InputChange, budget_diff
    from budgetlens.files import DiskFiles

    old = workspace(tmp_path / "old", [{"id": "a", "max_output_tokens": 500,
                                        "tools": [WEATHER]}])
    new = workspace(tmp_path / "new", [{"id": "a", "max_output_tokens": 500,
                                        "tools": [WEATHER, SEARCH], "reasoning": 300}])
    diff = budget_diff(DiffSide(str(tmp_path / "old"), [check(old)], DiskFiles()),
                       DiffSide(str(tmp_path / "new"), [check(new)], DiskFiles()))
    (only_step,) = diff.steps
    assert only_step.causes == (
        InputChange(ChangeKind.TERM, "tools", cookbook_tools([WEATHER]),
                    cookbook_tools([WEATHER, SEARCH])),
        InputChange(ChangeKind.TERM, "reasoning", None, 300))


def test_the_clamp_keeps_claude_s_output_above_its_thinking_budget(tmp_path: Path) -> None:
    make_workspace(tmp_path, config={"model": "claude-sonnet-4-0", "format_overhead_tokens": 0},
                   pipelines={"p.yaml": yaml.safe_dump({
                       "settings": {"max_context_tokens": 195000, "min_context_tokens": 195000,
                                    "budget_safety_margin_tokens": 100},
                       "steps": [{"id": "a", "type": "call_model", "max_output_tokens": 8000,
                                  "reasoning": 6000}]}, sort_keys=False)})
    report = check(tmp_path / "pipelines" / "p.yaml", policy="auto_clamp")
    s = step(report, "a")
    # 200,000 - 195,000 - 100 leaves 4,900 for the output, below the 6,000 of thinking
    # that lies inside it: the floor is 6,001 (not half of 8,000), so nothing is clamped
    assert s.output_floor is not None and s.output_floor.value == 6001
    assert report.clamp.outputs == ()
    assert codes.CANNOT_FIT in [d.code for d in report.diagnostics]


def test_a_provider_s_name_for_a_term_is_flagged_with_ours(tmp_path: Path) -> None:
    pipe = workspace(tmp_path, [{"id": "a", "max_output_tokens": 500,
                                 "reasoning_tokens": 4000},
                                {"id": "b", "max_output_tokens": 500, "thinkingBudget": 512}])
    found = [d for d in check(pipe).diagnostics if d.code == codes.NEAR_MISS_KEY]
    assert [(d.step, d.severity.value) for d in found] == [("a", "error"), ("b", "error")]
    assert all("did you mean 'reasoning'?" in d.message for d in found)


def test_check_request_asks_openai_for_output_plus_reasoning(tmp_path: Path) -> None:
    from budgetlens.request.fit import check_request

    pipe = workspace(tmp_path, [{"id": "a", "max_output_tokens": 2000, "reasoning": 4000}],
                     model="gpt-5")
    report = check(pipe)
    fit = check_request(step(report, "a"), [{"role": "user", "content": "Hi"}], report=report)
    # max_completion_tokens holds the visible 2,000 and the 4,000 of reasoning
    assert fit.request_kwargs()["max_completion_tokens"] == 6000
