"""``budgetlens models --doctor``'s rules on the shipped registry and on planted entries."""

from __future__ import annotations

import json
from importlib import resources

from budgetlens.models import load_registry
from budgetlens.models.doctor import Status, doctor, unjustified
from budgetlens.models.registry import apply_corrections, parse_registry

RAW = json.loads(resources.files("budgetlens.models").joinpath("registry.json")
                 .read_text("utf-8"))
CORRECTIONS = json.loads(resources.files("budgetlens.models").joinpath("corrections.json")
                         .read_text("utf-8"))


def test_the_shipped_registry_passes_the_doctor() -> None:
    found = doctor(load_registry())
    assert unjustified(found) == []
    # every exception says why, and every fix names its reason and source
    for finding in found:
        assert finding.reason.strip(), finding


def test_every_output_equal_to_the_window_is_fixed_or_justified() -> None:
    # counted from the raw snapshot by hand: max_output >= window
    raw = {n for n, e in RAW["models"].items()
           if e["max_output"] is not None and e["max_output"] >= e["window"]}
    found = doctor(load_registry())
    fixed = {f.model for f in found if f.status is Status.FIXED}
    justified = {f.model for f in found if f.status is Status.JUSTIFIED
                 and f.check == "output-not-below-window"}
    assert raw == fixed | justified and justified == {"gpt-4"}
    assert load_registry().models["ollama/llama3.1"].max_output is None
    assert load_registry().models["gpt-4"].max_output == 8192


def _registry(models: dict[str, dict[str, object]], **extra: object) -> str:
    return json.dumps({"format": 1, "date": "2026-01-02", "sources": [], **extra,
                       "models": {n: {"provider": "P", "max_input": None, "max_output": None,
                                      "tokenizer": "llama3", "source": "s", **m}
                                  for n, m in models.items()}})


def test_planted_entries_are_flagged() -> None:
    registry = apply_corrections(parse_registry(_registry({
        "same": {"window": 8192, "max_output": 8192},
        "sum": {"window": 1000, "max_input": 900, "max_output": 200},
        "restated": {"window": 1000, "max_input": 1000, "max_output": 200},
        "fine": {"window": 1000, "max_input": 800, "max_output": 200},
    }, disagreements={"fine": [{"field": "max_output", "kept": 200, "kept_from": "a",
                                "other": 100, "other_from": "b"}]})), {})
    found = {(f.model, f.check): f for f in doctor(registry)}
    assert set(found) == {("same", "output-not-below-window"),
                          ("sum", "input-plus-output-over-window"),
                          ("fine", "sources-disagree")}
    assert all(f.status is Status.UNJUSTIFIED for f in found.values())
    assert found[("sum", "input-plus-output-over-window")].message == (
        "max input 900 + max output 200 = 1,100 exceed the window 1,000")
    assert found[("fine", "sources-disagree")].message == "max_output: a says 200, b says 100"


def test_an_exception_justifies_and_a_rule_fixes() -> None:
    raw = parse_registry(_registry({"same": {"window": 8192, "max_output": 8192},
                                    "kept": {"window": 4096, "max_output": 4096}}))
    corrections = {"rules": CORRECTIONS["rules"],
                   "exceptions": {"kept": {"output-not-below-window": "published so"}}}
    registry = apply_corrections(raw, corrections)
    assert registry.models["same"].max_output is None
    assert registry.models["kept"].max_output == 4096
    found = {f.model: f.status for f in doctor(registry)}
    assert found == {"same": Status.FIXED, "kept": Status.JUSTIFIED}
    # applying again changes nothing more
    assert apply_corrections(registry, corrections).models == registry.models
