"""``extends``: merging along the chain, inherited terms located in the parent, link errors."""

from __future__ import annotations

from pathlib import Path

from budgetlens.source import Severity
from tests.core.contract.helpers import check, codes_of, make_workspace, only, text_at, tokens

SYSTEM = "System prompt of the base pipeline."
CONFIG = {"model_context_window": 8192, "model_max_tokens": 256, "format_overhead_tokens": 10}

BASE = """\
settings:
  max_context_tokens: 3000
  max_history_tokens: 500
  budget_safety_margin_tokens: 64
steps:
  - id: first
    type: call_model
    prompt_key: sys
    use_history: true
    max_output_tokens: 400
"""


def _ws(tmp_path: Path, **pipelines: str) -> Path:
    make_workspace(tmp_path, config=CONFIG, prompts={"sys.txt": SYSTEM},
                   pipelines={"base.yaml": BASE, **{f"{k}.yaml": v for k, v in
                                                   pipelines.items()}})
    return tmp_path / "pipelines"


def test_settings_merge_key_by_key_and_the_child_wins(tmp_path: Path) -> None:
    folder = _ws(tmp_path, child="extends: base.yaml\nsettings:\n  max_context_tokens: 1000\n")
    report = check(folder / "child.yaml")
    (step,) = report.steps
    assert (step.context.value, step.history.value, step.margin.value) == (1000, 500, 64)
    assert step.total == tokens(SYSTEM) + 10 + 500 + 1000 + 400 + 64
    assert step.context.location.file == str(folder / "child.yaml")
    assert not step.context.inherited
    # inherited terms point into the parent file, at the value
    assert step.history.inherited and step.history.location.file == str(folder / "base.yaml")
    assert text_at(folder / "base.yaml", step.history.location.range) == "500"
    assert text_at(folder / "base.yaml", step.margin.location.range) == "64"
    assert step.defined_in == str(folder / "base.yaml") and step.inherited


def test_child_steps_replace_the_parents(tmp_path: Path) -> None:
    folder = _ws(tmp_path, child="""\
extends: base.yaml
steps:
  - id: only
    type: call_model
    prompt_key: sys
    max_tokens: 100
""")
    report = check(folder / "child.yaml")
    assert [s.step for s in report.steps] == ["only"]
    assert report.steps[0].context.value == 3000  # still inherited
    assert report.steps[0].history.value == 0  # the new step does not use history


def test_a_three_file_chain_merges_nearest_first(tmp_path: Path) -> None:
    folder = _ws(tmp_path,
                 mid="extends: base.yaml\nsettings:\n  max_history_tokens: 200\n",
                 leaf="extends: mid.yaml\nsettings:\n  budget_safety_margin_tokens: 32\n")
    (step,) = check(folder / "leaf.yaml").steps
    assert (step.context.value, step.history.value, step.margin.value) == (3000, 200, 32)
    assert step.history.location.file == str(folder / "mid.yaml")
    assert step.context.location.file == str(folder / "base.yaml")


def test_extends_may_reach_a_subfolder(tmp_path: Path) -> None:
    folder = _ws(tmp_path, child="extends: shared/common.yaml\n")
    (folder / "shared").mkdir()
    (folder / "shared" / "common.yaml").write_text(BASE, "utf-8")
    report = check(folder / "child.yaml")
    assert report.diagnostics == []
    assert report.chain[1] == str(folder / "shared" / "common.yaml")


def test_missing_parent_is_reported_at_the_extends_value(tmp_path: Path) -> None:
    folder = _ws(tmp_path, child="extends: nowhere.yaml\n")
    report = check(folder / "child.yaml")
    diag = only(report, "BL020")
    assert text_at(folder / "child.yaml", diag.range) == "nowhere.yaml"
    assert "does not exist" in diag.message
    assert report.steps == []


def test_cycle_names_the_chain(tmp_path: Path) -> None:
    folder = _ws(tmp_path, a="extends: b.yaml\n", b="extends: c.yaml\n", c="extends: a.yaml\n")
    report = check(folder / "a.yaml")
    mine = [d for d in report.diagnostics if d.code == "BL021" and d.file.endswith("a.yaml")]
    assert len(mine) == 1
    assert text_at(folder / "a.yaml", mine[0].range) == "b.yaml"
    chain = " -> ".join(str(folder / n) for n in ("a.yaml", "b.yaml", "c.yaml", "a.yaml"))
    assert chain in mine[0].message


def test_self_extension_is_a_cycle(tmp_path: Path) -> None:
    folder = _ws(tmp_path, me="extends: me.yaml\n")
    assert only(check(folder / "me.yaml"), "BL021").severity is Severity.ERROR


def test_parent_outside_the_workspace_root(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    folder = _ws(ws, child="extends: ../../outside.yaml\n")
    (tmp_path / "outside.yaml").write_text(BASE, "utf-8")
    report = check(folder / "child.yaml")
    diag = only(report, "BL022")
    assert text_at(folder / "child.yaml", diag.range) == "../../outside.yaml"


def test_parent_with_errors_is_flagged_in_the_child(tmp_path: Path) -> None:
    folder = _ws(tmp_path, broken="settings: [unclosed\n", child="extends: broken.yaml\n")
    report = check(folder / "child.yaml")
    assert "BL023" in codes_of(report)
    assert any(d.code == "BL001" and d.file == str(folder / "broken.yaml")
               for d in report.diagnostics)


def test_parent_that_is_a_directory(tmp_path: Path) -> None:
    folder = _ws(tmp_path, child="extends: adir\n")
    (folder / "adir").mkdir()
    diag = only(check(folder / "child.yaml"), "BL020")
    assert "directory" in diag.message
