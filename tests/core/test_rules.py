"""The rule explanations the package carries (rules.json) are docs/diagnostics.md's text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from budgetlens.codes import CODES
from budgetlens.rules import RULES_FILE, all_rules, close_codes, get_rule

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "diagnostics.md"


def _section(doc: str, code: str) -> str:
    """The text under ``### CODE`` up to the next heading, cut out by hand."""
    after = doc.split(f"\n### {code}\n", 1)[1]
    lines = []
    for line in after.splitlines():
        if line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines).strip() + "\n"


def test_rules_json_is_regenerated_from_docs_diagnostics_md() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_rules.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_every_registered_code_has_its_section_and_row() -> None:
    doc = DOC.read_text("utf-8")
    rules = all_rules()
    assert set(rules) == set(CODES)
    for code in CODES:
        rule = rules[code]
        assert rule.text == _section(doc, code), code
        row = f"| [{code}](#{code.lower()}) | {rule.severity} | {rule.title} |"
        assert row in doc, code
    assert json.loads(RULES_FILE.read_text("utf-8"))["rules"]["BL050"]["severity"] == \
        "error (fail_fast) / warning (auto_clamp)"


def test_the_check_fails_when_the_doc_changes(tmp_path: Path) -> None:
    """The script's --check compares with the page: an edit of a section is a difference."""
    script = (ROOT / "scripts" / "gen_rules.py").read_text("utf-8")
    copy = tmp_path / "scripts" / "gen_rules.py"
    copy.parent.mkdir()
    copy.write_text(script, "utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "shared_core" / "budgetlens").mkdir(parents=True)
    (tmp_path / "shared_core" / "budgetlens" / "rules.json").write_bytes(RULES_FILE.read_bytes())
    doc = DOC.read_text("utf-8")
    (tmp_path / "docs" / "diagnostics.md").write_text(
        doc.replace("**Fix:** remove\none of them.", "**Fix:** remove one."), "utf-8")
    proc = subprocess.run([sys.executable, str(copy), "--check"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1
    assert "out of date" in proc.stderr


def test_lookup_ignores_case_and_suggests_close_codes() -> None:
    rule = get_rule(" bl050 ")
    assert rule is not None and rule.code == "BL050"
    assert get_rule("BL999") is None
    assert "BL050" in close_codes("BL05O")
    assert close_codes("50")[0] == "BL050"
