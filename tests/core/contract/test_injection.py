"""settings.injection in pipelines: diagnostics at the right ranges, and each step's split.

Token numbers: the system prompt "You are a careful legal assistant.\\n" is 7 cl100k tokens,
the template "Question: {q}" rendered empty ("Question: ") is 3, format overhead 30: fixed 40.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetlens import DiskFiles, check_pipeline
from budgetlens.contract.injection_settings import (
    INJECTION_CODES,
    check_injection,
    check_injection_text,
)
from budgetlens.source import Position, Range, Severity

STEP = """steps:
  - id: answer
    type: call_model
    prompt_key: legal
    use_history: true
    user_parts:
      template: "Question: {q}"
    max_output_tokens: 800
"""


def workspace(tmp_path: Path, pipelines: dict[str, str], window: int = 16000) -> Path:
    (tmp_path / "config.json").write_text(json.dumps({
        "model_context_window": window, "model_max_tokens": 1000, "prompts_dir": "prompts",
        "format_overhead_tokens": 30, "tokenizer": "cl100k_base"}), "utf-8")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "legal.txt").write_text("You are a careful legal assistant.\n",
                                                   "utf-8")
    (tmp_path / "pipelines").mkdir()
    for name, text in pipelines.items():
        (tmp_path / "pipelines" / name).write_text(text, "utf-8")
    return tmp_path


def check(root: Path, name: str):  # type: ignore[no-untyped-def]
    files = DiskFiles(root)
    report = check_pipeline(root / "pipelines" / name, files=files)
    return report, check_injection(report, files=files)


BASE = """settings:
  max_context_tokens: 4000
  max_history_tokens: 2000
  injection:
    max_injection_tokens_absolute: 6000
    min_bucket_tokens: 700
"""


def test_inherited_policy_gives_each_call_model_step_its_split(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"base.yaml": BASE, "p.yaml": "extends: base.yaml\n" + STEP})
    report, inj = check(root, "p.yaml")
    assert report.steps[0].fixed.value == 40  # 7 + 3 + 30, see the module docstring
    assert inj.diagnostics == ()
    assert inj.policy is not None and inj.policy.min_bucket_tokens == 700
    (s,) = inj.steps
    # used 40 + 2,000; remaining 13,960; 20% = 2,792; 40% = 1,116.8 -> 1,116;
    # 60% = 1,675.2 -> 1,675 (above the 700 minimum)
    assert (s.step, s.tokens_used_before, s.window) == ("answer", 2040, 16000)
    assert s.label == "injection 2,792: cards 1,116 · buckets 1,675"
    # direct target: 20% = 558.4 -> 558; 80% = 2,233.6 -> 2,233
    assert (s.direct_target.knowledge_card_budget, s.direct_target.bucket_budget) == (558, 2233)
    assert inj.location is not None and inj.location.file.endswith("base.yaml")
    assert inj.step(0) is s


def test_child_keys_win_one_by_one(tmp_path: Path) -> None:
    child = ("extends: base.yaml\nsettings:\n  injection:\n"
             "    knowledge_card_share_default: 0.5\n    bucket_content_share_default: 0.5\n"
             + STEP)
    root = workspace(tmp_path, {"base.yaml": BASE, "p.yaml": child})
    _, inj = check(root, "p.yaml")
    assert inj.policy is not None
    assert (inj.policy.knowledge_card_share_default, inj.policy.max_injection_tokens_absolute,
            inj.policy.min_bucket_tokens) == (0.5, 6000, 700)
    # total 2,792; 50% = 1,396 each
    assert inj.steps[0].label == "injection 2,792: cards 1,396 · buckets 1,396"


def test_no_injection_block_reports_nothing(tmp_path: Path) -> None:
    base = BASE.split("  injection:")[0]
    root = workspace(tmp_path, {"p.yaml": base + STEP})
    _, inj = check(root, "p.yaml")
    assert (inj.policy, inj.steps, inj.diagnostics) == (None, (), ())


def test_window_overrun_gives_zero_and_says_so(tmp_path: Path) -> None:
    base = BASE.replace("max_history_tokens: 2000", "max_history_tokens: 20000")
    root = workspace(tmp_path, {"p.yaml": base + STEP})
    _, inj = check(root, "p.yaml")
    s = inj.steps[0]
    assert s.budget.context_overrun
    assert s.label == "injection 0: cards 0 · buckets 0 (window overrun)"


BAD = """settings:
  max_context_tokens: 4000
  injection:
    knowledge_card_share_default: 1.5
    max_injection_tokns: 3
    max_injection_tokens_pct_of_context: "20%"
    min_bucket_tokens: true
    schema_version: 2
"""


def test_invalid_values_and_unknown_keys_are_reported_at_their_ranges() -> None:
    inj = check_injection_text("p.yaml", BAD)
    got = {(d.code, d.range.start.line): d for d in inj.diagnostics}
    share = got[("BL102", 3)]
    # "    knowledge_card_share_default: " is 34 characters; the value 1.5 is 34..37
    assert share.range == Range(Position(3, 34), Position(3, 37))
    assert share.severity is Severity.ERROR
    assert share.message == ("settings.injection.knowledge_card_share_default: input should be"
                             " less than or equal to 1 (got 1.5)")
    unknown = got[("BL101", 4)]
    assert unknown.range == Range(Position(4, 4), Position(4, 23))  # the key
    assert unknown.message.startswith("settings.injection: unknown key 'max_injection_tokns';")
    assert got[("BL102", 5)].range.start == Position(5, 41)
    assert got[("BL102", 6)].range == Range(Position(6, 23), Position(6, 27))
    assert "schema_version" in got[("BL102", 7)].message
    assert len(inj.diagnostics) == 5
    assert all(d.pipeline == "p.yaml" for d in inj.diagnostics)


def test_minimum_above_the_absolute_maximum_is_a_warning_with_the_maximum_related() -> None:
    text = ("settings:\n  injection:\n    max_injection_tokens_absolute: 1000\n"
            "    min_knowledge_card_tokens: 1500\n")
    (d,) = check_injection_text("p.yaml", text).diagnostics
    assert (d.code, d.severity) == ("BL103", Severity.WARNING)
    assert d.range == Range(Position(3, 31), Position(3, 35))
    assert d.message.startswith("settings.injection.min_knowledge_card_tokens 1,500 is larger"
                                " than max_injection_tokens_absolute 1,000")
    assert d.related[0].location.range == Range(Position(2, 35), Position(2, 39))


def test_minimums_together_above_the_maximum() -> None:
    text = ("settings:\n  injection:\n    max_injection_tokens_absolute: 1000\n"
            "    min_knowledge_card_tokens: 600\n    min_bucket_tokens: 600\n")
    (d,) = check_injection_text("p.yaml", text).diagnostics
    assert d.code == "BL104"
    assert "= 1,200 is more than max_injection_tokens_absolute 1,000" in d.message
    assert d.range.start.line == 4


@pytest.mark.parametrize(("shares", "effect"), [
    ((0.3, 0.5), "20% of the injection budget is never given out"),
    ((0.7, 0.6), "the split is scaled down to the total"),
])
def test_shares_not_adding_up_to_one_are_noted(shares: tuple[float, float],
                                               effect: str) -> None:
    text = (f"settings:\n  injection:\n    knowledge_card_share_default: {shares[0]}\n"
            f"    bucket_content_share_default: {shares[1]}\n")
    (d,) = check_injection_text("p.yaml", text).diagnostics
    assert (d.code, d.severity) == ("BL105", Severity.INFORMATION)
    assert d.message.endswith(effect)


def test_block_that_is_not_a_mapping() -> None:
    (d,) = check_injection_text("p.yaml", "settings:\n  injection: 6000\n").diagnostics
    assert d.code == "BL100"
    assert d.range == Range(Position(1, 13), Position(1, 17))


def test_every_code_is_registered() -> None:
    assert sorted(INJECTION_CODES) == ["BL100", "BL101", "BL102", "BL103", "BL104", "BL105"]


def test_contract_diagnostics_are_unaffected_by_the_block(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"p.yaml": BAD + STEP.replace("use_history: true",
                                                             "use_history: false")})
    report, inj = check(root, "p.yaml")
    # check_pipeline runs the injection check itself: its diagnostics are the report's BL1xx.
    assert report.injection is not None
    assert {d for d in report.diagnostics if d.code.startswith("BL1")} == set(inj.diagnostics)
    assert len(inj.diagnostics) == 5
