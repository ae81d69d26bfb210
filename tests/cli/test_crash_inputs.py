"""Legal input that used to crash the CLI (issue 30, cases 10 and 13 and the minor ones).

Each case runs the real command (``budgetlens`` in a subprocess, or ``main``) on files a
user would write; expected numbers come from tiktoken directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from budgetlens.tokens.core import get_tokenizer
from tests.core.contract.helpers import make_workspace

SPACES = 1_000_000  # about 1 MB: tiktoken's regex panics on it (PanicException)
PIPELINE = """settings:
  max_context_tokens: 1000
  max_history_tokens: 0
steps:
  - id: big
    type: call_model
    prompt_key: spaces
    user_parts:
      template: "Q"
    max_output_tokens: 100
"""


def _cli(*argv: str, cwd: Path, env_extra: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_CACHE_HOME=str(cwd / "xdg"), **(env_extra or {}))
    env.pop("PIPELINE_LIMITS_POLICY", None)
    env.pop("BUDGETLENS_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", "budgetlens_cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def _spaces_tokens(name: str) -> int:
    # A text of spaces only is one regex piece (\s+(?!\S) to the end of the text); tiktoken
    # merges that piece itself, without the regex that fails on it.
    enc = get_tokenizer(name)._encoding  # type: ignore[attr-defined]
    return len(enc._encode_single_piece(b" " * SPACES))


@pytest.fixture
def spaces_ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws", config={"model_context_window": 20000,
                                                   "model_max_tokens": 100,
                                                   "developement": True,
                                                   "tokenizer": "o200k_base"},
                          pipelines={"p.yaml": PIPELINE}, prompts={"spaces.txt": " " * SPACES})


def test_tokens_counts_a_megabyte_of_spaces(spaces_ws: Path) -> None:
    done = _cli("tokens", "prompts/spaces.txt", "--format", "json", cwd=spaces_ws)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout)["files"][0]["tokens"] == _spaces_tokens("o200k_base")


def test_check_counts_a_megabyte_of_spaces(spaces_ws: Path) -> None:
    done = _cli("check", ".", "--format", "json", "--no-cache", cwd=spaces_ws)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    doc = json.loads(done.stdout)
    (step,) = doc["steps"]
    assert step["budget"]["system_prompt"] == _spaces_tokens("o200k_base")
    assert done.returncode == 0, done.stdout  # 7,813 + ... fits a window of 20,000


@pytest.fixture
def panicking(monkeypatch: pytest.MonkeyPatch) -> type[BaseException]:
    """cl100k_base's encoding raising tiktoken's own PanicException on a text holding
    ``PANIC``, as it does on inputs its regex cannot handle."""
    enc = get_tokenizer("cl100k_base")._encoding  # type: ignore[attr-defined]
    try:
        enc.encode_ordinary(" " * SPACES)
    except BaseException as exc:  # the real class, whatever its module
        panic = type(exc)
    assert not issubclass(panic, Exception)
    real = enc.encode_ordinary

    def encode_ordinary(text: str) -> list[int]:
        if "PANIC" in text:
            raise panic("called `Result::unwrap()` on an `Err` value: StackOverflow")
        return real(text)  # type: ignore[no-any-return]

    monkeypatch.setattr(enc, "encode_ordinary", encode_ordinary)
    return panic


def test_check_reports_a_prompt_the_tokenizer_fails_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        panicking: type[BaseException]) -> None:
    from budgetlens_cli.main import main

    ws = make_workspace(tmp_path / "ws", config={"model_context_window": 20000,
                                                 "model_max_tokens": 100,
                                                 "developement": True,
                                                 "tokenizer": "cl100k_base"},
                        pipelines={"p.yaml": PIPELINE}, prompts={"spaces.txt": "x PANIC y"})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(ws)
    code = main(["check", ".", "--format", "json", "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 1, err
    (diag,) = json.loads(out)["diagnostics"]
    assert diag["code"] == "BL041"
    assert "cannot be counted with cl100k_base" in diag["message"]
    assert "spaces.txt" in diag["message"]


def test_tokens_reports_a_text_the_tokenizer_fails_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        panicking: type[BaseException]) -> None:
    from budgetlens_cli.main import main

    (tmp_path / "p.txt").write_text("x PANIC y", "utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    code = main(["tokens", "p.txt", "--tokenizer", "cl100k_base"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("budgetlens: error: p.txt: the text cannot be counted with"
                          " cl100k_base: the tokenizer failed on it")
    assert len(err.splitlines()) == 1


def test_tokens_refuses_a_file_over_the_prompt_cap(tmp_path: Path) -> None:
    """check refuses prompt files over 8 MiB (files.MAX_FILE_BYTES); tokens did not, and a
    20 MB file took 13.8 s and 1 GB of memory."""
    (tmp_path / "big.txt").write_bytes(b"word " * (2 * 1024 * 1024))  # 10 MiB
    done = _cli("tokens", "big.txt", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "budgetlens: error: big.txt: larger than 8 MiB\n"
