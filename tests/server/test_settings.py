"""Unit tests of the language server's settings parsing."""

from __future__ import annotations

from budgetlens.serialize import to_jsonable
from budgetlens_lsp.settings import Settings, parse_settings


def test_defaults_and_a_full_valid_object() -> None:
    assert parse_settings(None) == (Settings(), [])
    assert parse_settings([]) == (Settings(), [])  # an empty Lua table arrives as []
    assert parse_settings({"lenses": [], "diagnostics": []}) == (Settings(), [])
    raw = {"policy": "auto_clamp", "tokenizer": "o200k_base", "configPath": "cfg/config.json",
           "hierarchyBudget": 0, "cutMarker": "⟦CUT⟧", "debounceMs": 0,
           "diagnostics": {"pipelines": True, "prompts": False, "truncatedJson": False},
           "lenses": {"steps": False, "prompts": True, "settings": False}}
    settings, problems = parse_settings({"budgetlens": raw})
    assert problems == []
    assert to_jsonable(settings) == raw


def test_each_invalid_value_is_reported_and_falls_back_alone() -> None:
    settings, problems = parse_settings({
        "policy": "sometimes", "hierarchyBudget": True, "cutMarker": "", "debounceMs": 10**6,
        "tokenizer": "  ", "lenses": {"steps": "yes", "nope": True}, "diagnostics": 3,
        "unknown": 1, "configPath": "ok.json"})
    assert settings == Settings(config_path="ok.json")
    joined = "\n".join(problems)
    for name in ("budgetlens.policy", "budgetlens.hierarchyBudget", "budgetlens.cutMarker",
                 "budgetlens.debounceMs", "budgetlens.tokenizer", "budgetlens.lenses.steps",
                 "budgetlens.lenses.nope", "budgetlens.diagnostics", "budgetlens.unknown"):
        assert name in joined
    assert parse_settings(["not", "an", "object"])[1]
