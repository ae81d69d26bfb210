"""``budgetlens models``: the listing, QUERY, ``--doctor`` on the shipped registry and on a
planted entry, and a models.json that changes ``check``'s verdict. Expected values are
written by hand from registry.json and the files made here."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from budgetlens_cli.main import main
from tests.workspaces.models import ANSWER_PIPELINE as PIPELINE
from tests.workspaces.models import enter, model_workspace

RAW = json.loads(resources.files("budgetlens.models").joinpath("registry.json")
                 .read_text("utf-8"))


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    model_workspace(tmp_path / "ws", {"model": "gpt-4o", "format_overhead_tokens": 10},
                    PIPELINE)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no user models.json
    return enter(tmp_path / "ws", monkeypatch)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_models_lists_every_model(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "models", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert [m["name"] for m in data["models"]] == sorted(RAW["models"])
    gpt4o = next(m for m in data["models"] if m["name"] == "gpt-4o")
    assert (gpt4o["window"], gpt4o["max_input"], gpt4o["max_output"]) == (128000, 128000,
                                                                          16384)
    assert gpt4o["counting"] == "o200k_base (exact)" and gpt4o["date"] == RAW["date"]
    claude = next(m for m in data["models"] if m["name"] == "claude-sonnet-4-5")
    assert claude["counting"] == "≈ claude_approx" and claude["exact"] is False
    code, out, _ = _run(capsys, "models")
    assert code == 0
    assert out.splitlines()[0] == (f"model registry {RAW['date']}: {len(RAW['models'])} of"
                                   f" {len(RAW['models'])} models (≈ approximate counts;"
                                   " - not published)")


def test_a_query_finds_names_tags_and_prefixes(ws: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "models", "gpt-4o-mini")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split() == ["model", "provider", "window", "max", "input", "max",
                                "output", "tokenizer", "date", "source"]
    row = lines[2].split()
    assert row[:7] == ["gpt-4o-mini", "OpenAI", "128,000", "128,000", "16,384", "o200k_base",
                       "(exact)"]
    # an Ollama tag: its model first; a prefix: the model itself
    for query, first in (("llama3.1:8b", "llama-3.1-8b-instruct"),
                         ("openai/gpt-4o-mini", "gpt-4o-mini")):
        code, out, _ = _run(capsys, "models", query, "--format", "json")
        assert code == 0 and json.loads(out)["models"][0]["name"] == first
    # punctuation and case ignored: llama3.1 finds llama-3.1-...
    code, out, _ = _run(capsys, "models", "LLAMA3.1", "--format", "json")
    names = [m["name"] for m in json.loads(out)["models"]]
    assert "llama-3.1-8b-instruct" in names and "llama-3.1-70b-instruct" in names
    assert all("3.1" in n or "3-1" in n or "31" in n for n in names)
    code, out, _ = _run(capsys, "models", "zzzqqq")
    assert code == 1 and "no model matches 'zzzqqq'" in out


def test_the_doctor_passes_the_shipped_registry(ws: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "models", "--doctor")
    assert code == 0
    assert ", 0 unjustified" in out.splitlines()[0]
    assert "  ✓ gpt-4: output-not-below-window: max output 8,192 is not below the window" \
           " 8,192; justified: OpenAI publishes" in out
    code, out, _ = _run(capsys, "models", "--doctor", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["unjustified"] == 0
    assert {f["status"] for f in data["findings"]} == {"fixed", "justified"}


def test_the_doctor_flags_a_planted_entry(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "models.json").write_text(
        '{"models": {\n  "my-llama": {"window": 8192, "max_output": 8192}\n}}\n', "utf-8")
    code, out, _ = _run(capsys, "models", "--doctor")
    assert code == 1
    assert ", 1 unjustified" in out.splitlines()[0]
    # on line 2, the value of "window" at column 26, of "max_output" at column 46 (1-based)
    assert ("  ✗ my-llama: output-not-below-window: max output 8,192 is not below the window"
            " 8,192 (window at models.json:2:26, max_output at models.json:2:46)"
            ) in out
    # the entry is listed with where it comes from
    code, out, _ = _run(capsys, "models", "my-llama", "--format", "json")
    [row] = json.loads(out)["models"]
    # (the path as found from the current folder, the workspace)
    assert row["set_by"] == {"window": "models.json:2:26", "max_output": "models.json:2:46"}


def test_a_bad_models_json_is_reported(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "models.json").write_text('{"models": {"gpt-4o": {"window": -1}}}', "utf-8")
    code, out, err = _run(capsys, "models", "gpt-4o", "--format", "json")
    assert code == 0
    assert err == ("models.json:1:34: error BL069: models.json"
                   " models.gpt-4o.window must be a whole number > 0, got -1; the registry's"
                   " value is used\n")
    assert json.loads(out)["models"][0]["window"] == 128000


def test_a_models_json_changes_checks_verdict(ws: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", ".", "--format", "json", "--policy", "fail_fast")
    assert code == 0  # 10 + 1000 + 500 + 90 = 1,600 fits gpt-4o's 128,000
    (ws / "models.json").write_text('{"models": {\n  "gpt-4o": {"window": 1500}\n}}\n',
                                    "utf-8")
    code, out, _ = _run(capsys, "check", ".", "--format", "json", "--policy", "fail_fast")
    assert code == 1  # 1,600 > 1,500: an error in fail_fast
    data = json.loads(out)
    [bl050] = [d for d in data["diagnostics"] if d["code"] == "BL050"]
    assert "1600" in bl050["message"].replace(",", "")
    code, out, _ = _run(capsys, "check", ".", "--policy", "fail_fast")
    # "window": 1500: line 2, column 24 (1-based)
    assert "window: 1500 from model gpt-4o (models.json:2:24) at models.json:2:24" in out
    # back to the registry's window once the file is gone (the result cache notices)
    (ws / "models.json").unlink()
    code, out, _ = _run(capsys, "check", ".", "--policy", "fail_fast")
    assert code == 0


def test_the_users_models_json_counts_in_check_and_models(
        ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    user = tmp_path / "xdg" / "budgetlens"  # $XDG_CONFIG_HOME (the fixture), outside ws
    user.mkdir(parents=True)
    (user / "models.json").write_text('{"models": {"gpt-4o": {"window": 1500}}}', "utf-8")
    code, out, _ = _run(capsys, "check", ".", "--policy", "fail_fast")
    assert code == 1  # 1,600 > 1,500
    assert f"window: 1500 from model gpt-4o (models.json:1:34) at {user / 'models.json'}" \
           ":1:34" in out
    code, out, _ = _run(capsys, "models", "gpt-4o", "--format", "json")
    assert json.loads(out)["models"][0]["window"] == 1500
    # the workspace's file wins over the user's
    (ws / "models.json").write_text('{"models": {"gpt-4o": {"window": 2000}}}', "utf-8")
    code, out, _ = _run(capsys, "check", ".", "--policy", "fail_fast")
    assert code == 0


def test_a_models_file_setting_that_is_not_a_path_is_an_error(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = json.loads((ws / "config.json").read_text("utf-8"))
    (ws / "config.json").write_text(json.dumps({**config, "models_file": 3}), "utf-8")
    code, out, _ = _run(capsys, "check", ".", "--format", "json")
    assert code == 1
    [bad] = [d for d in json.loads(out)["diagnostics"] if d["code"] == "BL069"]
    assert bad["file"] == "config.json"
    assert bad["message"] == ("config.json models_file must be the path of a models.json,"
                              " got 3; models.json next to config.json is read")


def test_names_from_a_models_json_are_printed_escaped(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (ws / "models.json").write_text(
        '{"models": {"evil\\u001b[2Jname": {"window": 4096, "max_output": 4096}}}', "utf-8")
    code, out, _ = _run(capsys, "models", "evil")
    assert code == 0 and "\x1b" not in out
    assert out.splitlines()[2].startswith("evil\\x1b[2Jname ")
    code, out, _ = _run(capsys, "models", "--doctor")
    assert code == 1 and "\x1b" not in out
    assert "  ✗ evil\\x1b[2Jname: output-not-below-window" in out
