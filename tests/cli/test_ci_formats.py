"""``budgetlens check --format github|gitlab|junit``: golden files written by hand, the
published schemas (SARIF 2.1.0, GitLab Code Quality) and the escaping rules."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from budgetlens_cli.ci_formats import escape_data, escape_property, relative_path
from budgetlens_cli.main import main

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "ci_workspace"  # one error (BL050), one warning (BL042), one info (BL105)
GOLDEN = HERE / "golden"
SCHEMAS = HERE / "schemas"
EXAMPLES = HERE.parents[1] / "examples"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(WORKSPACE, tmp_path / "ci_workspace")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    return tmp_path / "ci_workspace"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text("utf-8"))
    return loaded


@pytest.mark.parametrize(("fmt", "golden"), [("github", "check_github.txt"),
                                              ("gitlab", "check_gitlab.json"),
                                              ("junit", "check_junit.xml")])
def test_format_matches_its_hand_written_golden_file(
        ws: Path, capsys: pytest.CaptureFixture[str], fmt: str, golden: str) -> None:
    code, out = _run(capsys, "check", "ci_workspace", "--format", fmt)
    assert code == 1  # exit codes unchanged: an error was found
    assert out == (GOLDEN / golden).read_text("utf-8")


@pytest.mark.parametrize("fmt", ["github", "gitlab", "junit"])
def test_an_absolute_path_is_shown_relative_to_the_current_folder(
        ws: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    _, relative = _run(capsys, "check", "ci_workspace", "--format", fmt)
    _, absolute = _run(capsys, "check", str(ws), "--format", fmt)
    assert absolute == relative


def test_the_gitlab_fingerprint_is_a_hash_of_code_path_step_and_key_path(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out = _run(capsys, "check", "ci_workspace", "--format", "gitlab")
    issue = next(i for i in json.loads(out) if i["check_name"] == "BL042")
    # issue 30 case 9: the message is no longer hashed (its numbers change); the BL042 of
    # step 'echo' points at its id, the third step's: key path steps.2.id
    expected = hashlib.sha256(
        b"BL042\0ci_workspace/pipelines/small.yaml\0echo\0steps.2.id").hexdigest()
    assert issue["fingerprint"] == expected
    # an unrelated line added above: the lines move, the fingerprints do not
    pipeline = ws / "pipelines" / "small.yaml"
    pipeline.write_text("# one more line\n" + pipeline.read_text("utf-8"), "utf-8")
    _, moved = _run(capsys, "check", "ci_workspace", "--format", "gitlab")
    before, after = json.loads(out), json.loads(moved)
    assert [i["fingerprint"] for i in after] == [i["fingerprint"] for i in before]
    assert [i["location"]["lines"]["begin"] for i in after] == [9, 19, 26]


def test_gitlab_output_validates_against_the_code_quality_schema(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out = _run(capsys, "check", "ci_workspace", "--format", "gitlab")
    jsonschema.validate(json.loads(out), _schema("gitlab-code-quality-minimal.json"))
    fingerprints = [i["fingerprint"] for i in json.loads(out)]
    assert len(set(fingerprints)) == len(fingerprints) == 3


@pytest.mark.parametrize("folder", ["ci_workspace", "examples"])
def test_sarif_output_validates_against_the_oasis_schema(
        ws: Path, capsys: pytest.CaptureFixture[str], folder: str) -> None:
    if folder == "examples":
        shutil.copytree(EXAMPLES, Path("examples"))
    _, out = _run(capsys, "check", folder, "--format", "sarif")
    schema = _schema("sarif-schema-2.1.0.json")
    jsonschema.Draft4Validator.check_schema(schema)
    jsonschema.Draft4Validator(schema).validate(json.loads(out))


def test_a_schema_rejects_a_wrong_document() -> None:
    """The vendored schemas do constrain: a report missing a required field fails."""
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{"description": "x", "check_name": "BL050", "severity": "major",
                              "location": {"path": "a", "lines": {"begin": 1}}}],
                            _schema("gitlab-code-quality-minimal.json"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(_schema("sarif-schema-2.1.0.json")).validate(
            {"version": "2.1.0", "runs": [{"results": []}]})


def test_junit_on_the_examples_has_a_suite_per_pipeline_and_a_case_per_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    code, out = _run(capsys, "check", "examples", "--format", "junit")
    assert code == 1
    root = ET.fromstring(out)
    suites = {s.get("name"): [c.get("name") for c in s] for s in root}
    assert suites == {
        "examples/pipelines/base.yaml": ["route", "answer", "(file)"],
        "examples/pipelines/chat.yaml": ["chat", "(file)"],
        "examples/pipelines/long_report.yaml": ["outline", "write_report", "(file)"],
        "examples/pipelines/multilingual.yaml": ["answer_ja", "(file)"],
        "examples/pipelines/support.yaml": ["route", "answer", "(file)"]}
    failed = [(s.get("name"), c.get("name")) for s in root for c in s
              if c.find("failure") is not None]
    assert failed == [("examples/pipelines/long_report.yaml", "write_report")]
    assert (root.get("tests"), root.get("failures")) == ("13", "1")


def test_junit_file_level_errors_get_their_own_case_and_xml_is_escaped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(WORKSPACE, tmp_path / "w")
    monkeypatch.chdir(tmp_path)
    # a broken pipeline file: a YAML syntax error (BL001) that belongs to no step
    Path("w/pipelines/broken.yaml").write_text("steps: [\n  - id: <&>\n", "utf-8")
    code, out = _run(capsys, "check", "w/pipelines/broken.yaml", "--format", "junit")
    assert code == 1
    root = ET.fromstring(out)  # well-formed XML
    (suite,) = list(root)
    (case,) = list(suite)
    assert case.get("name") == "(file)"
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "BL001"
    assert (failure.text or "").startswith("w/pipelines/broken.yaml:")


def test_no_errors_exits_0_in_every_ci_format(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = ws / "pipelines" / "small.yaml"
    pipeline.write_text(pipeline.read_text("utf-8").replace(
        "max_output_tokens: 300", "max_output_tokens: 200"), "utf-8")
    for fmt in ("github", "gitlab", "junit"):
        code, out = _run(capsys, "check", "ci_workspace", "--format", fmt)
        assert code == 0, (fmt, out)
    assert "failures=\"0\"" in out


def test_escaping_follows_the_actions_toolkit() -> None:
    # by hand from @actions/core: escapeData %, \r, \n; escapeProperty also : and ,
    assert escape_data("50% a:b,c\r\nd") == "50%25 a:b,c%0D%0Ad"
    assert escape_property("50% a:b,c\r\nd") == "50%25 a%3Ab%2Cc%0D%0Ad"
    assert escape_data("%25") == "%2525"


def test_relative_path_keeps_a_file_outside_the_current_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "in").mkdir()
    monkeypatch.chdir(tmp_path / "in")
    assert relative_path(str(tmp_path / "in" / "p.yaml")) == "p.yaml"
    outside = (tmp_path / "out.yaml").as_posix()
    assert relative_path(outside) == outside


def test_the_formats_work_as_a_real_process(ws: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "budgetlens_cli", "check", "ci_workspace",
                           "--format", "github"], capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stdout == (GOLDEN / "check_github.txt").read_text("utf-8")


def test_the_examples_in_docs_cli_md_are_the_golden_files() -> None:
    """docs/cli.md shows the github and junit outputs whole, and the BL050 issue of gitlab."""
    doc = (HERE.parents[1] / "docs" / "cli.md").read_text("utf-8")
    assert (GOLDEN / "check_github.txt").read_text("utf-8") in doc
    assert (GOLDEN / "check_junit.xml").read_text("utf-8") in doc
    (issue,) = [i for i in json.loads((GOLDEN / "check_gitlab.json").read_text("utf-8"))
                if i["check_name"] == "BL050"]
    assert "\n".join("  " + line for line in json.dumps(issue, indent=2).splitlines()) in doc
