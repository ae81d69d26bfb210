"""Numbers Python cannot read in config.json (4,300+ digits) are a normal diagnostic at the
value, in the core and on the command line; an internal failure of the CLI is one line and
exit status 2. Expected lines are written out by hand."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from budgetlens.contract.config import load_config
from budgetlens.source import Range
from budgetlens_cli import check_run
from budgetlens_cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HUGE = "9" * 4301


def test_a_window_of_4301_digits_is_bl012_at_the_value() -> None:
    text = '{\n  "model_context_window": ' + HUGE + ',\n  "model_max_tokens": 512\n}\n'
    loaded = load_config("config.json", text)
    [d] = loaded.diagnostics
    assert (d.code, d.severity.value) == ("BL012", "error")
    assert d.message == ("model_context_window must be an integer > 0, got a number of 4,301"
                         " digits: too long to read")
    assert d.range == Range.at(1, 26, 1, 26 + 4301)
    assert loaded.window_ok is False
    assert loaded.config is not None and loaded.config.model_max_tokens == 512


def test_other_unreadable_numbers_are_bl013_and_their_keys_fall_back() -> None:
    text = ('{"model_context_window": 8192, "model_max_tokens": -' + "1" * 5000
            + ', "runtime": {"seed": ' + "7" * 4400 + '}, "note": "' + "5" * 5000 + '"}')
    loaded = load_config("config.json", text)
    assert [(d.code, d.message) for d in loaded.diagnostics] == [
        ("BL013", "config.json model_max_tokens: a number of 5,000 digits is too long to"
                  " read; the value is ignored"),
        ("BL013", "config.json runtime: a number of 4,400 digits is too long to read; the"
                  " value is ignored"),
    ]
    start = len('{"model_context_window": 8192, "model_max_tokens": ')
    assert loaded.diagnostics[0].range == Range.at(0, start, 0, start + 5001)
    assert loaded.window_ok and loaded.config is not None
    assert loaded.config.model_context_window == 8192
    assert loaded.config.model_max_tokens is None  # the default


def test_a_syntax_error_after_an_unreadable_number_is_still_reported() -> None:
    loaded = load_config("config.json", '{"model_context_window": ' + HUGE + ',,}')
    [d] = loaded.diagnostics
    assert d.code == "BL011" and d.message.startswith("config.json is not valid JSON:")


def test_check_prints_the_diagnostic_line_and_exits_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    config = tmp_path / "ws" / "config.json"
    config.write_text(config.read_text("utf-8").replace("8192", HUGE), "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    code = main(["check", "ws", "--no-table"])
    out, err = capsys.readouterr()
    assert code == 1
    assert err == ""
    assert ("ws/config.json:2:27: error[BL012] model_context_window must be an integer > 0,"
            " got a number of 4,301 digits: too long to read") in out.splitlines()
    assert "internal error" not in out


def test_an_internal_failure_is_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BUDGETLENS_TRACEBACK", raising=False)

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("tokenizer table is gone\nsecond line")

    monkeypatch.setattr(check_run, "check_pipeline", broken)
    code = main(["check", "ws"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err == ("budgetlens: internal error: RuntimeError: tokenizer table is gone (a bug:"
                   " please report it; BUDGETLENS_TRACEBACK=1 prints the details)\n")
    monkeypatch.setenv("BUDGETLENS_TRACEBACK", "1")
    assert main(["check", "ws"]) == 2
    _, err = capsys.readouterr()
    assert err.splitlines()[0].startswith("budgetlens: internal error: RuntimeError:")
    assert "Traceback (most recent call last):" in err
