"""``budgetlens rule CODE`` explains a code as ``ruff rule`` does; ``--all`` lists them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetlens.codes import CODES
from budgetlens_cli.main import main

DOC = (Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md").read_text("utf-8")


def _section(code: str) -> str:
    after = DOC.split(f"\n### {code}\n", 1)[1]
    end = min(i for i in (after.find("\n#"), len(after)) if i >= 0)
    return after[:end].strip()


def test_rule_prints_code_severity_title_and_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "BL050"]) == 0
    out = capsys.readouterr().out
    first, blank, *rest = out.splitlines()
    assert first == ("BL050 (error (fail_fast) / warning (auto_clamp)):"
                     " step does not fit the context window")
    assert blank == ""
    assert "\n".join(rest) == _section("BL050")
    assert "budgetlens clamp --diff" in out  # the fix


def test_rule_json_and_lowercase(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "bl006", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {"code": "BL006", "severity": "warning", "title": "duplicate mapping key",
                    "text": _section("BL006") + "\n"}


def test_unknown_code_is_bad_usage_with_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "BL05O"]) == 2  # letter O for zero
    err = capsys.readouterr().err
    assert err.startswith("budgetlens: error: unknown diagnostic code 'BL05O'; did you mean")
    assert "BL050" in err and len(err.splitlines()) == 1
    assert main(["rule", "nonsense"]) == 2
    assert "budgetlens rule --all" in capsys.readouterr().err


def test_rule_all_lists_every_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule", "--all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == sorted(CODES)
    assert main(["rule", "--all", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {r["code"] for r in listed} == set(CODES)


def test_rule_needs_a_code_or_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rule"]) == 2
    assert "give a CODE" in capsys.readouterr().err
