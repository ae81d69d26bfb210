"""Hostile input gives a diagnostic, never a traceback, and never hangs.

"Fast" is measured in CPU time of this process (``time.process_time``): the work the check
did, the same on a machine busy with other work, where wall-clock time is not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from budgetlens.files import MAX_FILE_BYTES
from budgetlens.source import Severity
from budgetlens.yamldoc.parse import parse_yaml
from tests.core.contract.helpers import check, codes_of, make_workspace, only

CONFIG = {"model_context_window": 8192, "model_max_tokens": 256}
GOOD = """\
settings:
  max_context_tokens: 1000
steps:
  - id: s
    type: call_model
    prompt_key: sys
"""

BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def _pipeline(tmp_path: Path, text: str, prompts: dict | None = None) -> Path:
    make_workspace(tmp_path, config=CONFIG, pipelines={"p.yaml": text},
                   prompts={"sys.txt": "hello"} if prompts is None else prompts)
    return tmp_path / "pipelines" / "p.yaml"


def test_malformed_yaml_is_reported_at_its_line(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, "settings:\n  max_context_tokens: 10\n\tsteps: []\n")
    diag = only(check(path), "BL001")
    assert diag.range.start.line == 2  # the line with the tab, 0-based
    assert diag.severity is Severity.ERROR


def test_unclosed_flow_sequence_is_a_syntax_error(tmp_path: Path) -> None:
    report = check(_pipeline(tmp_path, "settings: {max_context_tokens: 10}\nsteps: [\n"))
    assert codes_of(report) == ["BL001"]


@pytest.mark.parametrize("value", [
    "!!python/object/apply:os.system ['touch pwned']",
    "!!python/object:builtins.dict {}",
    "!!python/name:os.system",
    "!custom 5",
    "!!binary aGVsbG8=",
    "!!set {a, b}",
])
def test_yaml_tags_are_refused_and_never_constructed(tmp_path: Path, value: str) -> None:
    path = _pipeline(tmp_path, f"settings:\n  max_context_tokens: {value}\n")
    report = check(path)
    diag = only(report, "BL002")
    assert diag.range.start.line == 1
    assert "tag" in diag.message
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_alias_bomb_is_refused_fast_with_bounded_memory(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, BILLION_LAUGHS)
    tracemalloc.start()
    started = time.process_time()
    report = check(path)
    elapsed = time.process_time() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    diag = only(report, "BL003")
    assert "alias" in diag.message
    assert elapsed < 5.0
    assert peak < 64 * 1024 * 1024


def test_self_referencing_alias_is_refused(tmp_path: Path) -> None:
    assert "BL003" in codes_of(check(_pipeline(tmp_path, "a: &a [*a, *a]\n")))


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    assert codes_of(check(_pipeline(tmp_path, "x: " + "[" * 3000 + "]" * 3000))) == ["BL003"]


def test_non_printable_characters_are_a_syntax_error(tmp_path: Path) -> None:
    diag = only(check(_pipeline(tmp_path, "settings:\n  a: \x07\n")), "BL001")
    assert diag.range.start.line == 1


def test_two_documents_are_a_syntax_error(tmp_path: Path) -> None:
    assert "BL001" in codes_of(check(_pipeline(tmp_path, "a: 1\n---\nb: 2\n")))


def test_huge_integer_is_refused(tmp_path: Path) -> None:
    report = check(_pipeline(tmp_path, "settings:\n  max_context_tokens: 1" + "0" * 6000 + "\n"))
    assert "BL003" in codes_of(report)


def test_fifty_megabyte_prompt_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, GOOD, prompts={})
    big = tmp_path / "prompts" / "sys.txt"
    big.parent.mkdir(exist_ok=True)
    chunk = ("The quick brown fox jumps over the lazy dog. " * 1000).encode()
    with big.open("wb") as fh:
        while fh.tell() < 50 * 1024 * 1024:
            fh.write(chunk)
    assert big.stat().st_size > MAX_FILE_BYTES
    started = time.process_time()
    report = check(path)
    assert time.process_time() - started < 5.0
    diag = only(report, "BL041")
    assert "cap" in diag.message and str(MAX_FILE_BYTES) in diag.message
    assert report.steps[0].system_prompt.value == 0


def test_binary_prompt_file(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10"
    diag = only(check(_pipeline(tmp_path, GOOD, prompts={"sys.txt": png})), "BL041")
    assert "binary" in diag.message


def test_non_utf8_prompt_file(tmp_path: Path) -> None:
    latin1 = "café crème".encode("latin-1")
    diag = only(check(_pipeline(tmp_path, GOOD, prompts={"sys.txt": latin1})), "BL041")
    assert "not UTF-8" in diag.message and "0xe9" in diag.message


def test_empty_pipeline_file(tmp_path: Path) -> None:
    assert codes_of(check(_pipeline(tmp_path, ""))) == ["BL004"]


def test_pipeline_that_is_a_list(tmp_path: Path) -> None:
    assert codes_of(check(_pipeline(tmp_path, "- a\n- b\n"))) == ["BL004"]


def test_empty_prompt_file_costs_nothing(tmp_path: Path) -> None:
    report = check(_pipeline(tmp_path, GOOD, prompts={"sys.txt": ""}))
    assert report.diagnostics == []
    assert report.steps[0].system_prompt.value == 0


def test_empty_config_json(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, GOOD)
    (tmp_path / "config.json").write_text("")
    assert "BL011" in codes_of(check(path))


def test_config_json_nesting_bomb(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, GOOD)
    (tmp_path / "config.json").write_text("[" * 200000 + "]" * 200000)
    assert "BL011" in codes_of(check(path))


def test_directory_where_a_prompt_file_is_expected(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, GOOD, prompts={})
    (tmp_path / "prompts" / "sys.txt").mkdir(parents=True)
    diag = only(check(path), "BL041")
    assert "directory" in diag.message


def test_directory_where_the_pipeline_is_expected(tmp_path: Path) -> None:
    make_workspace(tmp_path, config=CONFIG)
    (tmp_path / "pipelines" / "p.yaml").mkdir(parents=True)
    diag = only(check(tmp_path / "pipelines" / "p.yaml"), "BL007")
    assert "directory" in diag.message


def test_directory_named_config_json(tmp_path: Path) -> None:
    make_workspace(tmp_path, pipelines={"p.yaml": GOOD}, prompts={"sys.txt": "x"})
    (tmp_path / "config.json").mkdir()
    diag = only(check(tmp_path / "pipelines" / "p.yaml"), "BL011")
    assert "directory" in diag.message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only")
def test_fifo_prompt_does_not_hang(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, GOOD, prompts={})
    (tmp_path / "prompts").mkdir(exist_ok=True)
    os.mkfifo(tmp_path / "prompts" / "sys.txt")
    diag = only(check(path), "BL041")
    assert "not a regular file" in diag.message


def test_prompt_symlink_leaving_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    path = _pipeline(ws, GOOD, prompts={})
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (ws / "prompts").mkdir(exist_ok=True)
    (ws / "prompts" / "sys.txt").symlink_to(secret)
    diag = only(check(path), "BL041")
    assert "outside the workspace root" in diag.message
    assert check(path).steps[0].system_prompt.value == 0


def test_prompt_key_climbing_out_of_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (tmp_path / "x.txt").write_text("outside")
    path = _pipeline(ws, GOOD.replace("prompt_key: sys", "prompt_key: ../../x"))
    assert "outside the workspace root" in only(check(path), "BL041").message


def test_extends_symlink_leaving_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    path = _pipeline(ws, "extends: link.yaml\n")
    (tmp_path / "real.yaml").write_text(GOOD)
    (ws / "pipelines" / "link.yaml").symlink_to(tmp_path / "real.yaml")
    assert only(check(path), "BL022").severity is Severity.ERROR


def test_extends_cycle(tmp_path: Path) -> None:
    make_workspace(tmp_path, config=CONFIG,
                   pipelines={"a.yaml": "extends: b.yaml\n", "b.yaml": "extends: a.yaml\n"})
    report = check(tmp_path / "pipelines" / "a.yaml")
    assert "BL021" in codes_of(report)


def test_parse_yaml_reports_instead_of_raising_on_garbage() -> None:
    for text in ("\x00\x01", "{{{{", "]", "a: b: c", "- [", "? [a]\n: 1", "&a *a", "%YAML 9\n"):
        doc, problems = parse_yaml(text)
        assert doc is None or problems == [] or all(not p.fatal for p in problems)


def test_cli_on_a_workspace_of_hostile_files_never_prints_a_traceback(tmp_path: Path) -> None:
    make_workspace(tmp_path, config=CONFIG, prompts={"bin.txt": b"\x00\xff", "sys.txt": "x"},
                   pipelines={
                       "bomb.yaml": BILLION_LAUGHS,
                       "tag.yaml": "a: !!python/object/apply:os.system ['echo hi']\n",
                       "broken.yaml": "a: [\n",
                       "empty.yaml": "",
                       "cycle.yaml": "extends: cycle.yaml\n",
                       "bin.yaml": GOOD.replace("prompt_key: sys", "prompt_key: bin"),
                   })
    (tmp_path / "pipelines" / "dir.yaml").mkdir()
    proc = subprocess.run([sys.executable, "-m", "budgetlens_cli", "check",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 1
    for code in ("BL001", "BL002", "BL003", "BL004", "BL007", "BL021", "BL041"):
        assert f"[{code}]" in proc.stdout


def test_oversized_pipeline_files_are_refused_fast(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, "# " + "x" * (3 * 1024 * 1024) + "\n")
    started = time.process_time()
    assert codes_of(check(path)) == ["BL003"]
    path.write_bytes(b"# " + b"x" * (MAX_FILE_BYTES + 10))
    diag = only(check(path), "BL007")
    assert "cap" in diag.message
    assert time.process_time() - started < 5.0


def test_symlink_loop_prompt(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, GOOD, prompts={})
    (tmp_path / "prompts").mkdir(exist_ok=True)
    (tmp_path / "prompts" / "sys.txt").symlink_to(tmp_path / "prompts" / "sys.txt")
    diag = only(check(path), "BL041")
    assert "symbolic links" in diag.message or "outside" in diag.message
