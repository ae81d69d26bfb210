"""The persistent result cache of ``budgetlens check`` (``budgetlens_cli.cache``).

Mechanisms, never wall-clock: the core's check is counted (``check_run.check_pipeline``, the
one door to it), and a cached run must print the same bytes as a run without the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import budgetlens
from budgetlens_cli import cache as result_cache
from budgetlens_cli import check_cmd, check_run
from budgetlens_cli.main import main
from tests.cli.cache_helpers import without_note
from tests.core.contract.helpers import make_workspace

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FORMATS = ("text", "json", "sarif", "github", "gitlab", "junit")
CACHE = Path(".budgetlens_cache")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", result_cache.CACHE_DIR_ENV,
                 result_cache.NO_CACHE_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every pipeline the core checks, in order (the real check runs)."""
    calls: list[str] = []
    real = check_run.check_pipeline

    def counting(path: Path | str, **kwargs: object) -> object:
        calls.append(Path(path).name)
        return real(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(check_run, "check_pipeline", counting)
    return calls


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    return Path("ws")


SHARED = "Answer with care. " * 20
ONLY_A = "You write the outline. " * 10


@pytest.fixture
def small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three pipelines: a reads prompt only_a; b and c read prompt shared; c extends base."""
    step = "steps:\n  - {{id: s, type: call_model, prompt_key: {}, max_output_tokens: 100}}\n"
    make_workspace(tmp_path / "ws",
                   config={"model_context_window": 4096, "model_max_tokens": 1024},
                   prompts={"only_a.txt": ONLY_A, "shared.txt": SHARED},
                   pipelines={"a.yaml": "settings:\n  max_context_tokens: 1000\n"
                                        + step.format("only_a"),
                              "b.yaml": "settings:\n  max_context_tokens: 1000\n"
                                        + step.format("shared"),
                              "base.yaml": "settings:\n  max_context_tokens: 1200\n",
                              "c.yaml": "extends: base.yaml\n" + step.format("shared")})
    monkeypatch.chdir(tmp_path)
    return Path("ws")


# ------------------------------------------------------------------ the second run reads it
@pytest.mark.parametrize("fmt", FORMATS)
def test_second_run_checks_nothing_and_prints_the_same_bytes(
        examples: Path, checked: list[str], capsys: pytest.CaptureFixture[str],
        fmt: str) -> None:
    reference = _run(capsys, "check", "ws", "--format", fmt, "--no-cache")
    assert len(checked) == 5
    checked.clear()
    first = _run(capsys, "check", "ws", "--format", fmt)
    assert len(checked) == 5
    checked.clear()
    second = _run(capsys, "check", "ws", "--format", fmt)
    assert checked == []
    assert first == second == reference
    assert reference[0] == 1 and reference[2] == ""
    if fmt in ("json", "sarif", "gitlab"):
        json.loads(second[1])


def test_one_entry_serves_every_format_that_was_rendered_once(
        examples: Path, checked: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    _run(capsys, "check", "ws")
    checked.clear()
    # sarif, github and gitlab print the diagnostics only: no re-check
    for fmt in ("sarif", "github", "gitlab"):
        _run(capsys, "check", "ws", "--format", fmt)
    assert checked == []
    # json needs each step rendered, which the text run did not keep: checked once, then kept
    _run(capsys, "check", "ws", "--format", "json")
    assert len(checked) == 5
    checked.clear()
    _run(capsys, "check", "ws", "--format", "json")
    _run(capsys, "check", "ws")
    assert checked == []


@pytest.mark.parametrize(("change", "rechecked"), [
    ("pipelines/a.yaml", ["a.yaml"]),
    ("prompts/only_a.txt", ["a.yaml"]),
    ("prompts/shared.txt", ["b.yaml", "c.yaml"]),
    ("pipelines/base.yaml", ["base.yaml", "c.yaml"]),
    ("config.json", ["a.yaml", "b.yaml", "base.yaml", "c.yaml"]),
])
def test_a_changed_file_rechecks_exactly_the_pipelines_that_read_it(
        small: Path, checked: list[str], capsys: pytest.CaptureFixture[str],
        change: str, rechecked: list[str]) -> None:
    _run(capsys, "check", "ws")
    assert checked == ["a.yaml", "b.yaml", "base.yaml", "c.yaml"]
    checked.clear()
    path = small / change
    if change == "config.json":
        path.write_text(json.dumps({"model_context_window": 2048, "model_max_tokens": 1024}),
                        "utf-8")
    elif change.endswith(".txt"):
        path.write_text(path.read_text("utf-8") * 30, "utf-8")
    else:
        path.write_text(path.read_text("utf-8").replace("max_context_tokens: 1",
                                                        "max_context_tokens: 3"), "utf-8")
    after = _run(capsys, "check", "ws")
    assert checked == rechecked
    checked.clear()
    assert after == _run(capsys, "check", "ws", "--no-cache")
    checked.clear()
    assert _run(capsys, "check", "ws") == after
    assert checked == []


def test_a_file_saved_unchanged_rechecks_nothing(
        small: Path, checked: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    first = _run(capsys, "check", "ws")
    checked.clear()
    for path in (small / "prompts" / "shared.txt", small / "config.json"):
        path.write_bytes(path.read_bytes())  # new times, same bytes: the content decides
        os.utime(path, ns=(1, 1))
    assert _run(capsys, "check", "ws") == first
    assert checked == []


def test_a_config_json_created_where_one_was_looked_for_rechecks(
        small: Path, checked: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    _run(capsys, "check", "ws")
    checked.clear()
    (small / "pipelines" / "config.json").write_text(
        json.dumps({"model_context_window": 1500, "model_max_tokens": 1024}), "utf-8")
    after = _run(capsys, "check", "ws")
    assert checked == ["a.yaml", "b.yaml", "base.yaml", "c.yaml"]
    assert "window 1500" in after[1]


def test_the_options_are_part_of_the_key(
        small: Path, checked: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _run(capsys, "check", "ws")
    checked.clear()
    policy = _run(capsys, "check", "ws", "--policy", "auto_clamp")
    assert len(checked) == 4 and "policy auto_clamp" in policy[1]
    checked.clear()
    monkeypatch.setenv("PIPELINE_LIMITS_POLICY", "auto_clamp")
    _run(capsys, "check", "ws")
    assert len(checked) == 4
    checked.clear()
    tokenizer = _run(capsys, "check", "ws", "--tokenizer", "o200k_base")
    assert len(checked) == 4 and "tokenizer o200k_base" in tokenizer[1]


# ------------------------------------------------------------------ bypass, damage, versions
def test_no_cache_neither_reads_nor_writes(
        small: Path, checked: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _run(capsys, "check", "ws", "--no-cache")
    _run(capsys, "check", "ws", "--no-cache")
    assert len(checked) == 8
    assert not CACHE.exists()
    monkeypatch.setenv(result_cache.NO_CACHE_ENV, "1")
    _run(capsys, "check", "ws")
    assert len(checked) == 12 and not CACHE.exists()


def _cache_files() -> list[Path]:
    return sorted(CACHE.glob("*/*.cache"))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "empty", "other-key"])
def test_a_damaged_cache_file_is_ignored_and_rewritten(
        small: Path, checked: list[str], capsys: pytest.CaptureFixture[str],
        damage: str) -> None:
    first = _run(capsys, "check", "ws")
    (file,) = _cache_files()
    data = file.read_bytes()
    if damage == "garbage":
        file.write_bytes(b"\x80\x04not a cache at all")
    elif damage == "truncated":
        file.write_bytes(data[:len(data) // 2])
    elif damage == "flipped":
        i = len(data) - 40
        file.write_bytes(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])
    elif damage == "empty":
        file.write_bytes(b"")
    else:
        file.write_bytes(data.replace(file.stem.encode(), b"0" * len(file.stem), 1))
    checked.clear()
    assert without_note(_run(capsys, "check", "ws"), damage != "empty") == first
    assert len(checked) == 4
    checked.clear()
    assert _run(capsys, "check", "ws") == first
    assert checked == []


@pytest.mark.parametrize("call", ["os.system", "a budgetlens function"])
def test_a_planted_cache_file_cannot_run_code(
        small: Path, checked: list[str], capsys: pytest.CaptureFixture[str],
        tmp_path: Path, call: str) -> None:
    first = _run(capsys, "check", "ws")
    (file,) = _cache_files()
    key = file.read_bytes()[len(result_cache.MAGIC):].split(b"\n", 1)[0].decode()
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self) -> tuple[object, tuple[object, ...]]:
            if call == "os.system":
                return (os.system, (f"touch {marker}",))
            return (result_cache._create_once, (marker, "written"))  # writes a file if run

    payload = pickle.dumps({"ws/pipelines/a.yaml": Evil()})
    checksum = hashlib.blake2b(payload, digest_size=16).hexdigest().encode()
    file.write_bytes(result_cache.MAGIC + key.encode() + b"\n" + checksum + b"\n" + payload)
    checked.clear()
    assert without_note(_run(capsys, "check", "ws")) == first
    assert not marker.exists()
    assert len(checked) == 4


def test_a_new_version_makes_every_entry_a_miss(
        small: Path, checked: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = _run(capsys, "check", "ws")
    checked.clear()
    monkeypatch.setattr(result_cache, "__version__", "99.0.0")
    assert _run(capsys, "check", "ws") == first
    assert len(checked) == 4
    # the installed version (from the git tag: 0.1.0, 0.1.dev5+g1234abc, ...) names a folder
    assert sorted(p.parent.name for p in _cache_files()) == sorted([budgetlens.__version__,
                                                                    "99.0.0"])
    checked.clear()
    monkeypatch.setattr(result_cache, "code_fingerprint", lambda: "edited code")
    _run(capsys, "check", "ws")
    assert len(checked) == 4


# ------------------------------------------------------------------ where it is written
def test_the_default_folder_ignores_itself_and_nothing_else_is_written(
        small: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    before = {p for p in tmp_path.rglob("*")}
    _run(capsys, "check", "ws")
    new = {p for p in tmp_path.rglob("*")} - before
    assert new and all(p == tmp_path / CACHE or (tmp_path / CACHE) in p.parents for p in new)
    assert (CACHE / ".gitignore").read_text("utf-8").splitlines()[-1] == "*"
    assert (CACHE / "CACHEDIR.TAG").read_text("utf-8").startswith(
        "Signature: 8a477f597d28d172789f06886806bc55")
    assert not list(CACHE.glob("*/.tmp-*"))


def test_cache_dir_option_and_environment_variable(
        small: Path, checked: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _run(capsys, "check", "ws", "--cache-dir", "opt")
    assert Path("opt", ".gitignore").is_file() and not CACHE.exists()
    monkeypatch.setenv(result_cache.CACHE_DIR_ENV, str(tmp_path / "env"))
    checked.clear()
    _run(capsys, "check", "ws")
    assert len(checked) == 4 and (tmp_path / "env" / ".gitignore").is_file()
    checked.clear()
    _run(capsys, "check", "ws", "--cache-dir", "opt")  # the option wins over the variable
    assert checked == [] and not CACHE.exists()


def test_an_unwritable_cache_is_one_warning_and_the_same_result(
        small: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reference = _run(capsys, "check", "ws", "--no-cache")
    code, out, err = _run(capsys, "check", "ws", "--cache-dir", "missing/parent/dir")
    assert (code, out) == reference[:2]
    assert err.startswith("budgetlens: warning: result cache not written (cannot create")
    assert err.count("\n") == 1
    assert not Path("missing").exists()


def test_a_default_folder_that_is_a_symlink_is_not_written_through(
        small: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    CACHE.symlink_to(elsewhere)
    reference = _run(capsys, "check", "ws", "--no-cache")
    code, out, err = _run(capsys, "check", "ws")
    assert (code, out) == reference[:2]
    assert "symbolic link" in err
    assert list(elsewhere.iterdir()) == []


def test_clamp_write_plans_from_the_files_and_the_next_check_follows_them(
        small: Path, checked: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    (small / "config.json").write_text(json.dumps(
        {"model_context_window": 1000, "model_max_tokens": 1024, "development": True}), "utf-8")
    code, _, _ = _run(capsys, "check", "ws")
    assert code == 1
    (file,) = _cache_files()
    kept = file.read_bytes()
    folder = small / "pipelines"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    checked.clear()
    assert _run(capsys, "clamp", "ws", "--write")[0] == 0
    assert checked == [] and file.read_bytes() == kept  # clamp neither reads nor writes it
    changed = {p.name for p in folder.iterdir() if p.read_bytes() != before[p.name]}
    assert changed
    after = _run(capsys, "check", "ws")
    assert after[0] == 0
    # exactly the pipelines whose files clamp rewrote (and c.yaml if its parent changed)
    assert set(checked) == changed | ({"c.yaml"} if "base.yaml" in changed else set())
    checked.clear()
    assert _run(capsys, "check", "ws") == after and checked == []


# ------------------------------------------------------------------ two processes at once
def test_two_runs_at_once_leave_a_valid_cache(
        tmp_path: Path, checked: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    step = ("settings:\n  max_context_tokens: 1000\n"
            "steps:\n  - {{id: s, type: call_model, prompt_key: p{}, max_output_tokens: 50}}\n")
    make_workspace(tmp_path / "ws", config={"model_context_window": 4096,
                                            "model_max_tokens": 1024},
                   prompts={f"p{i}.txt": f"prompt number {i} " * (i + 1) for i in range(40)},
                   pipelines={f"f{i:02d}.yaml": step.format(i) for i in range(40)})
    monkeypatch.chdir(tmp_path)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT")}
    cmd = [sys.executable, "-m", "budgetlens_cli", "check", "ws", "--format", "json"]
    procs = [subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outs[0] == outs[1] and outs[0][1] == ""
    (file,) = _cache_files()
    assert result_cache._decode(file.read_bytes(), file.read_bytes()[
        len(result_cache.MAGIC):].split(b"\n", 1)[0].decode()) is not None
    assert not list(CACHE.glob("*/.tmp-*"))
    code, out, _ = _run(capsys, "check", "ws", "--format", "json")
    assert checked == [] and (code, out) == (0, outs[0][0])


# ------------------------------------------------------------------ the key and the order
def test_every_option_but_the_output_ones_is_in_the_key() -> None:
    import argparse

    def key(**extra: object) -> tuple[str, ...]:
        base: dict[str, object] = {"paths": ["."], "policy": None, "tokenizer": None,
                                   "config": None, "format": "text", "no_table": False,
                                   "no_cache": False, "cache_dir": None}
        return check_cmd.options_key(argparse.Namespace(**{**base, **extra}), {})

    assert key() == key(format="json", no_table=True, paths=["x"], cache_dir="d")
    assert key() != key(policy="auto_clamp")
    assert key() != key(target="gpt-4o")  # an option added later is in the key by itself
    assert check_cmd.options_key(argparse.Namespace(), {"PIPELINE_LIMITS_POLICY": "x"}) != \
        check_cmd.options_key(argparse.Namespace(), {})


def test_collect_pipelines_keeps_the_first_place_of_each(small: Path) -> None:
    got = check_cmd.collect_pipelines(["ws/pipelines/c.yaml", "ws", "ws/pipelines/a.yaml",
                                       "ws"])
    assert [p.as_posix() for p in got] == ["ws/pipelines/c.yaml", "ws/pipelines/a.yaml",
                                          "ws/pipelines/b.yaml", "ws/pipelines/base.yaml"]


def test_each_input_is_resolved_once_for_the_check_and_its_hash(
        small: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The result cache locates each file's bytes (``ContentHashes``) with the run's
    resolved paths (``RunFiles.realpath``): one ``lstat`` per pipeline and prompt, not one
    for the check and another for its hash."""
    calls: Counter[str] = Counter()
    lstat = os.lstat

    def counting(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        calls[os.path.basename(str(path))] += 1
        return lstat(path, *args, **kwargs)

    reference = _run(capsys, "check", "ws", "--no-cache")
    monkeypatch.setattr(os, "lstat", counting)
    assert _run(capsys, "check", "ws", "-j", "1") == reference
    inputs = ("a.yaml", "b.yaml", "c.yaml", "base.yaml", "only_a.txt", "shared.txt")
    assert all(calls[name] == 1 for name in inputs), calls
