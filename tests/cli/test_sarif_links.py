"""``budgetlens check --format sarif`` as code scanning reads it (issue 35): the tool's
``informationUri``, an absolute ``helpUri`` per rule that lands on the code's section of
docs/diagnostics.md, and ``partialFingerprints`` that survive a second run and lines moving.
The document validates against the official SARIF 2.1.0 schema (tests/cli/schemas/README.md
says where the vendored copy comes from)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

from budgetlens_cli.main import main

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORKSPACE = HERE / "ci_workspace"  # one error (BL050), one warning (BL042), one info (BL105)
REPOSITORY = "https://github.com/budgetlens/budgetlens"
DOC_URL = REPOSITORY + "/blob/main/docs/diagnostics.md"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(WORKSPACE, tmp_path / "w")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    return tmp_path / "w"


def _sarif(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["check", "w", "--format", "sarif", *extra]) == 1  # BL050 is an error
    loaded: dict[str, Any] = json.loads(capsys.readouterr().out)
    return loaded


def _github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown page: the heading text lower-cased,
    every character but letters, digits, spaces, '-' and '_' dropped, spaces made '-'."""
    anchors = set()
    for line in markdown.splitlines():
        heading = re.match(r"^#{1,6} (.+)$", line)
        if heading:
            text = re.sub(r"[^\w\- ]", "", heading[1].strip().lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


def test_the_tool_and_every_rule_link_to_the_documentation(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    driver = _sarif(capsys)["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == REPOSITORY
    assert [r["id"] for r in driver["rules"]] == ["BL042", "BL050", "BL105"]
    assert [r["helpUri"] for r in driver["rules"]] == [
        DOC_URL + "#bl042", DOC_URL + "#bl050", DOC_URL + "#bl105"]


def test_every_help_uri_names_a_heading_of_docs_diagnostics_md() -> None:
    from budgetlens import codes
    from budgetlens.rules import help_uri

    anchors = _github_anchors((ROOT / "docs" / "diagnostics.md").read_text("utf-8"))
    for code in codes.CODES:
        uri = help_uri(code)
        assert uri is not None, code
        page, _, anchor = uri.partition("#")
        assert page == DOC_URL
        assert anchor in anchors, (code, anchor)


def test_partial_fingerprints_hold_across_runs_and_moved_lines(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def fingerprints(doc: dict[str, Any]) -> list[tuple[str, str]]:
        return [(r["ruleId"], r["partialFingerprints"]["budgetlens/v1"])
                for r in doc["runs"][0]["results"]]

    first = fingerprints(_sarif(capsys, "--no-cache"))
    assert fingerprints(_sarif(capsys, "--no-cache")) == first  # a second run
    assert len({f for _, f in first}) == len(first) == 3
    pipeline = ws / "pipelines" / "small.yaml"
    pipeline.write_text("# a comment\n\n" + pipeline.read_text("utf-8"), "utf-8")
    moved = _sarif(capsys)
    # the lines moved by two; the fingerprints did not
    results = moved["runs"][0]["results"]
    lines = [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results]
    assert lines == [10, 20, 27]
    assert fingerprints(moved) == first


@pytest.mark.parametrize("folder", ["ci_workspace", "examples"])
def test_sarif_with_links_validates_against_the_oasis_schema(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], folder: str) -> None:
    source = WORKSPACE if folder == "ci_workspace" else ROOT / "examples"
    shutil.copytree(source, tmp_path / "w")
    monkeypatch.chdir(tmp_path)
    doc = _sarif(capsys)
    schema = json.loads((HERE / "schemas" / "sarif-schema-2.1.0.json").read_text("utf-8"))
    jsonschema.Draft4Validator(schema).validate(doc)
    driver = doc["runs"][0]["tool"]["driver"]
    # absolute: a scheme and a host (the schema's "format": "uri" is not checked by
    # jsonschema without an extra library)
    for uri in [driver["informationUri"], *(r["helpUri"] for r in driver["rules"])]:
        parts = urlsplit(uri)
        assert (parts.scheme, parts.netloc) == ("https", "github.com"), uri
