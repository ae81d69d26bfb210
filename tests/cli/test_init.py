"""``budgetlens init`` (issue 35): a workspace (or one prompt file) that ``budgetlens check``
passes with no edit, never written over an existing file; an unknown model points to
``budgetlens models QUERY``. Expected numbers are worked out by hand from the registry
entries named in each test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from budgetlens.formats import read_prompt_file
from budgetlens.models import load_registry
from budgetlens_cli.main import main


@pytest.fixture(autouse=True)
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    return tmp_path


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


# ----------------------------------------------------------------------- pipeline
def test_init_then_check_passes_with_no_edit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "ws"]) == 0
    out = capsys.readouterr().out
    assert out == ("created ws/config.json\n"
                   "created ws/pipelines/assistant.yaml\n"
                   "created ws/prompts/assistant.txt\n"
                   "model gpt-4o-mini: window 128,000 tokens; next: budgetlens check ws\n")
    assert json.loads(Path("ws/config.json").read_text("utf-8")) == {
        "model": "gpt-4o-mini", "prompts_dir": "prompts", "development": True}
    pipeline = Path("ws/pipelines/assistant.yaml").read_text("utf-8")
    # gpt-4o-mini: window 128,000, output limit 16,384 -> 1,024 output, 8,000 context
    assert "  max_context_tokens: 8000\n" in pipeline
    assert "    max_output_tokens: 1024\n" in pipeline
    assert main(["check", "ws", "--format", "json", "--no-cache"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["diagnostics"] == []
    [step] = data["steps"]
    assert step["step"] == "answer" and step["fits"] is True
    assert step["budget"]["window"] == 128_000
    assert step["budget"]["context"] == 8000 and step["budget"]["output"] == 1024


@pytest.mark.parametrize(("model", "name", "context", "output"), [
    # groq/allam-2-7b: window 4,096, no published output limit:
    # output = min(1024, 4096 // 8 = 512) = 512; context = min(8000, 4096 // 2 - 512) = 1536
    ("groq/allam-2-7b", "groq/allam-2-7b", 1536, 512),
    # claude-sonnet-4-5: window 200,000 (approximate counts): 1,024 and 8,000
    ("claude-sonnet-4-5", "claude-sonnet-4-5", 8000, 1024),
    # an Ollama tag and a provider prefix are read as the registry reads them
    ("llama3.1:8b", "llama-3.1-8b-instruct", 8000, 1024),
    ("openai/gpt-4o", "gpt-4o", 8000, 1024),
])
def test_init_with_a_model_fits_that_model(capsys: pytest.CaptureFixture[str], model: str,
                                           name: str, context: int, output: int) -> None:
    assert main(["init", "--model", model, "ws"]) == 0
    capsys.readouterr()
    assert json.loads(Path("ws/config.json").read_text("utf-8"))["model"] == name
    pipeline = Path("ws/pipelines/assistant.yaml").read_text("utf-8")
    assert f"  max_context_tokens: {context}\n" in pipeline
    assert f"    max_output_tokens: {output}\n" in pipeline
    assert main(["check", "ws", "--no-cache"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == "1 pipeline, 1 call_model step (0 not fitting): 0 errors, 0 warnings"


def test_init_in_the_current_folder_and_check_in_real_processes(here: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT")}
    made = subprocess.run([sys.executable, "-m", "budgetlens_cli", "init"], cwd=here,
                          capture_output=True, text=True, check=False, env=env)
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[-1] == (
        "model gpt-4o-mini: window 128,000 tokens; next: budgetlens check")
    assert _files(here) == ["config.json", "pipelines/assistant.yaml", "prompts/assistant.txt"]
    checked = subprocess.run([sys.executable, "-m", "budgetlens_cli", "check"], cwd=here,
                             capture_output=True, text=True, check=False, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# ------------------------------------------------------------------ never overwrite
def test_an_existing_file_is_named_and_nothing_is_written(
        capsys: pytest.CaptureFixture[str]) -> None:
    Path("ws/prompts").mkdir(parents=True)
    Path("ws/prompts/assistant.txt").write_text("my own prompt\n", "utf-8")
    assert main(["init", "ws"]) == 2
    err = capsys.readouterr().err
    assert err == ("budgetlens: error: ws/prompts/assistant.txt exists; init never writes"
                   " over a file (nothing was written)\n")
    assert _files(Path("ws")) == ["prompts/assistant.txt"]  # no config.json, no pipeline
    assert Path("ws/prompts/assistant.txt").read_text("utf-8") == "my own prompt\n"


def test_a_second_init_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "ws"]) == 0
    before = {p: Path("ws", p).read_bytes() for p in _files(Path("ws"))}
    assert main(["init", "ws", "--model", "claude-sonnet-4-5"]) == 2
    assert "ws/config.json exists" in capsys.readouterr().err
    assert {p: Path("ws", p).read_bytes() for p in _files(Path("ws"))} == before


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32",
                    reason="symbolic links")
def test_a_dangling_symbolic_link_is_not_followed(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("ws").mkdir()
    os.symlink(here / "elsewhere.json", "ws/config.json")  # points at nothing
    assert main(["init", "ws"]) == 2
    assert "ws/config.json exists" in capsys.readouterr().err
    assert not (here / "elsewhere.json").exists()
    assert _files(Path("ws")) == []


# ----------------------------------------------------------------- unknown model
def test_an_unknown_model_names_the_nearest_and_the_models_query(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "ws", "--model", "gpt4o"]) == 2
    err = capsys.readouterr().err
    date = load_registry().date
    assert err.startswith(f"budgetlens: error: --model: 'gpt4o' is not in the model registry"
                          f" ({date}); nearest: gpt-4o, ")
    assert err.endswith("; run `budgetlens models gpt4o` to find its name\n")
    assert not Path("ws").exists()


def test_an_unknown_model_without_a_near_name_still_says_what_to_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "ws", "--model", "ollama/zzqx9:8b"]) == 2
    err = capsys.readouterr().err
    assert "nearest" not in err
    assert err.endswith("; run `budgetlens models zzqx9` to find its name\n")


def test_an_unknown_target_points_to_budgetlens_models(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "ws"]) == 0
    capsys.readouterr()
    assert main(["check", "ws", "--target", "gpt4o"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'gpt-4o'?" in err and "`budgetlens models gpt4o`" in err


# ---------------------------------------------------------------- prompt files
# The file init writes is read by its format's reader with no problem, and `check` passes it
# with no edit and no config.json.
@pytest.mark.parametrize(("fmt", "file"), [("github-models", "assistant.prompt.yml"),
                                           ("prompty", "assistant.prompty"),
                                           ("dotprompt", "assistant.prompt")])
@pytest.mark.parametrize(("model", "name", "output"), [
    ("gpt-4o-mini", "gpt-4o-mini", 1024),
    ("claude-sonnet-4-5", "claude-sonnet-4-5", 1024),
    ("gemini-2.5-flash", "gemini-2.5-flash", 1024),
    ("groq/allam-2-7b", "groq/allam-2-7b", 512),  # a 4,096 window: 4096 // 8
])
def test_init_prompt_file_is_read_by_its_format_with_no_problem(
        capsys: pytest.CaptureFixture[str], fmt: str, file: str, model: str, name: str,
        output: int) -> None:
    assert main(["init", "ws", "--format", fmt, "--model", model]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"created ws/{file}"
    assert _files(Path("ws")) == [file]
    path = Path("ws", file)
    read = read_prompt_file(str(path), path.read_text("utf-8"))
    assert read is not None and read.format == fmt
    assert read.problems == []
    [step] = read.steps
    assert step.output.value == output
    assert step.model is not None
    assert load_registry().resolve(str(step.model.value)) == name
    assert [m.role for m in step.messages] == ["system", "user"]
    assert step.messages[0].text.strip() == (
        "You are a helpful assistant. Answer the question in a few sentences.")
    assert step.messages[1].variables == ("question",)
    assert step.samples == [{"question": "What is a context window?"}]
    capsys.readouterr()
    assert main(["check", "ws", "--no-cache"]) == 0, capsys.readouterr()


@pytest.mark.parametrize(("fmt", "written"), [("github-models", "openai/gpt-4o-mini"),
                                              ("prompty", "gpt-4o-mini"),
                                              ("dotprompt", "openai/gpt-4o-mini")])
def test_the_model_is_spelled_as_the_format_spells_it(
        capsys: pytest.CaptureFixture[str], fmt: str, written: str) -> None:
    assert main(["init", "ws", "--format", fmt]) == 0
    [path] = Path("ws").iterdir()
    read = read_prompt_file(str(path), path.read_text("utf-8"))
    assert read is not None and read.steps[0].model is not None
    assert read.steps[0].model.value == written


def test_check_text_points_an_unknown_config_model_to_budgetlens_models(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "ws"]) == 0
    Path("ws/config.json").write_text('{"model": "gpt4o-mini"}\n', "utf-8")
    capsys.readouterr()
    assert main(["check", "ws", "--no-cache"]) == 1  # no window: BL012
    out = capsys.readouterr().out
    # BL012 (the error) and BL061 (the warning) each suggest gpt-4o-mini, then how to look
    help_line = "      = help: `budgetlens models gpt4o-mini` finds the registry's names"
    blocks = out.split("\n\n")[0].split("\nws/")
    assert [b.split("]")[0].rsplit("[", 1)[-1] for b in blocks] == ["BL012", "BL061"]
    assert all(b.endswith("did you mean 'gpt-4o-mini'?\n    1 | {\"model\": \"gpt4o-mini\"}\n"
                          "      |           ^^^^^^^^^^^^\n" + help_line) for b in blocks)


def test_a_step_model_without_a_close_name_is_not_told_twice(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "ws"]) == 0
    pipeline = Path("ws/pipelines/assistant.yaml")
    pipeline.write_text(pipeline.read_text("utf-8").replace(
        "    type: call_model\n", "    type: call_model\n    model: ollama/zzqx9:8b\n"), "utf-8")
    capsys.readouterr()
    assert main(["check", "ws", "--no-cache"]) == 0  # a warning: the pipeline's limits apply
    out = capsys.readouterr().out
    assert "run `budgetlens models zzqx9` to find its name" in out
    assert out.count("budgetlens models") == 1  # the message says it; no help line repeats it


def test_a_file_where_a_folder_goes_is_named_and_no_file_is_left(
        capsys: pytest.CaptureFixture[str]) -> None:
    Path("ws").mkdir()
    Path("ws/pipelines").write_text("not a folder\n", "utf-8")
    assert main(["init", "ws"]) == 2
    assert capsys.readouterr().err == (
        "budgetlens: error: ws/pipelines is not a folder (nothing was written)\n")
    # config.json, created first, was removed again
    assert _files(Path("ws")) == ["pipelines"]
    Path("elsewhere").write_text("x", "utf-8")
    assert main(["init", "elsewhere"]) == 2
    assert capsys.readouterr().err == (
        "budgetlens: error: elsewhere is not a folder (nothing was written)\n")
