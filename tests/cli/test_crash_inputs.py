"""Legal input that used to crash the CLI (issue 30, cases 10 and 13 and the minor ones).

Each case runs the real command (``budgetlens`` in a subprocess, or ``main``) on files a
user would write; expected numbers come from tiktoken directly.
"""

from __future__ import annotations

import json
import os
import shutil
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


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HUGE = 10**400


@pytest.mark.parametrize("where", [("tokens_used_before",), ("model_context_window",),
                                   ("policy", "min_knowledge_card_tokens"),
                                   ("policy", "min_bucket_tokens")],
                         ids=".".join)
def test_inject_refuses_a_huge_integer_naming_the_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        where: tuple[str, ...]) -> None:
    """10^400 was an OverflowError in the budget arithmetic: "internal error ... (a bug)"."""
    from budgetlens_cli.main import main

    plan = json.loads((EXAMPLES / "injection" / "plan.json").read_text("utf-8"))
    target = plan
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = HUGE
    (tmp_path / "plan.json").write_text(json.dumps(plan), "utf-8")
    monkeypatch.chdir(tmp_path)
    code = main(["inject", "plan.json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == ("budgetlens: error: plan.json: invalid plan:\n"
                   f"  {'.'.join(where)}: input should be less than or equal to"
                   " 1000000000000000\n")


def test_pack_takes_a_huge_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    """pack's numbers: a cap of 10^400 keeps everything (no overflow)."""
    from budgetlens_cli.main import main

    monkeypatch.chdir(EXAMPLES / "packing")
    for option in ("--max-chars", "--max-tokens"):
        code = main(["pack", "docs.json", "--intent", "general", option, str(HUGE),
                     "--format", "json"])
        out, _ = capsys.readouterr()
        assert code == 0
        doc = json.loads(out)
        assert doc[option[2:].replace("-", "_")] == HUGE
        assert doc["chars"] > 0


def test_check_refuses_a_huge_injection_minimum_naming_the_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same policy in a pipeline's settings.injection: an internal error before."""
    from budgetlens_cli.main import main

    ws = make_workspace(tmp_path / "ws", config={"model_context_window": 8192,
                                                 "model_max_tokens": 100,
                                                 "developement": True},
                        pipelines={"p.yaml": PIPELINE.replace(
                            "  max_history_tokens: 0\n",
                            "  max_history_tokens: 0\n  injection:\n"
                            f"    min_knowledge_card_tokens: {HUGE}\n")},
                        prompts={"spaces.txt": "You answer."})
    code = main(["check", str(ws), "--format", "json", "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 1 and "internal error" not in err
    (diag,) = json.loads(out)["diagnostics"]
    assert diag["code"] == "BL102"
    assert diag["message"].startswith("settings.injection.min_knowledge_card_tokens: input"
                                      " should be less than or equal to 1000000000000000")


def test_check_in_a_deleted_current_folder_is_one_line_of_usage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """It was "internal error: FileNotFoundError ... (a bug)"."""
    from budgetlens_cli.main import main

    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    for command in (["check"], ["clamp"], ["check", "ws", "--config", "c.json"]):
        code = main(command)
        out, err = capsys.readouterr()
        assert code == 2 and out == ""
        assert err == ("budgetlens: error: the current folder no longer exists (deleted or"
                       " moved): cd to a folder that exists, or give absolute paths\n")


@pytest.mark.parametrize(("config", "why"), [("/dev/null", "not a regular file"),
                                             ("ws", "is a directory, expected a config.json"
                                                    " file"),
                                             ("nope.json", "no such file")])
def test_config_option_says_what_it_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        config: str, why: str) -> None:
    """``--config /dev/null`` said "no such file"."""
    from budgetlens_cli.main import main

    shutil.copytree(EXAMPLES, tmp_path / "ws", ignore=shutil.ignore_patterns(".budgetlens*"))
    monkeypatch.chdir(tmp_path)
    code = main(["check", "ws", "--config", config])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == f"budgetlens: error: --config {config}: {why}\n"


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_config_outside_the_pipelines_tree_keeps_in_repo_extends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        absolute: bool) -> None:
    """A shared config.json kept beside the repository (``--config ../shared/config.json``)
    made every in-repo ``extends`` BL022 (outside the workspace root, which was the config's
    folder). docs/cli.md: the root is the folder common to that config and the pipeline.
    examples/ then has its one error: long_report.yaml's BL050."""
    from budgetlens_cli.main import main

    shutil.copytree(EXAMPLES, tmp_path / "ws", ignore=shutil.ignore_patterns(".budgetlens*"))
    shared = tmp_path / "shared"
    shared.mkdir()
    shutil.copy(tmp_path / "ws" / "config.json", shared / "config.json")
    shutil.copytree(tmp_path / "ws" / "prompts", shared / "prompts")
    monkeypatch.chdir(tmp_path / "ws")
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    config = str(shared / "config.json") if absolute else "../shared/config.json"
    code = main(["check", ".", "--config", config, "--format", "json", "--no-cache"])
    out, _ = capsys.readouterr()
    assert [(d["code"], d["step"]) for d in json.loads(out)["diagnostics"]] == \
        [("BL050", "write_report")]
    assert code == 1
