"""Issue 30, cases 7-9: every output escapes the strings it did not write.

An attacker controls the files of a pull request: step ids, the config's ``model``, a
``prompt_key`` (its path lands in a message raw) and the file names. Each test builds such
a workspace on disk and runs the CLI (``main([...])``), then reads the output as its consumer
would: GitHub's runner (every log line that starts with ``::`` after blanks is a workflow
command, and so is any line holding ``##[``), an XML parser, a JSON parser, a Markdown table
reader. The expected values are computed here: the runner's unescaping and a Markdown cell
decoder are written from their specifications, not taken from budgetlens.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetlens_cli.main import main

PROMPT = "You answer questions about the product manual."
FORGED = "::error file=README.md,line=1::forged"
SILENCE = "::stop-commands::tok"


def write_workspace(root: Path, steps: list[tuple[str, str]], *, model: str | None = None,
                    pipeline: str = "p.yaml", prompt: str = PROMPT) -> Path:
    """A workspace: config.json (window 1,000), prompts/main.txt and one pipeline whose steps
    are (id, prompt_key); every step asks for 900 + 200 tokens, so each one is over budget
    (BL050) whatever its prompt. Strings go into the YAML double-quoted (JSON escapes)."""
    (root / "pipelines").mkdir(parents=True)
    (root / "prompts").mkdir()
    config: dict[str, Any] = {"model_context_window": 1000, "model_max_tokens": 100,
                              "prompts_dir": "prompts", "tokenizer": "cl100k_base",
                              "development": True}
    if model is not None:
        config["model"] = model
    (root / "config.json").write_text(json.dumps(config), "utf-8")
    (root / "prompts" / "main.txt").write_text(prompt, "utf-8")
    lines = ["settings:", "  max_context_tokens: 900", "steps:"]
    for step_id, key in steps:
        lines += [f"  - id: {json.dumps(step_id)}", "    type: call_model",
                  f"    prompt_key: {json.dumps(key)}", "    user_parts:",
                  '      template: "Q: {q}"', "    max_output_tokens: 200"]
    path = os.path.join(os.fsencode(root / "pipelines"), os.fsencode(pipeline))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr().out
    out.encode("utf-8")  # what a UTF-8 stdout can write (no lone surrogate)
    return code, out


# ------------------------------------------------------------------ GitHub's runner
def runner_commands(out: str) -> list[tuple[str, dict[str, str], str]]:
    """The workflow commands GitHub's runner finds in a log: a line that starts with ``::``
    once trimmed (``::name props::data``, properties and data unescaped), and the legacy
    ``##[name ...]data`` anywhere in a line."""
    found = []
    for line in out.split("\n"):
        trimmed = line.strip()
        if trimmed.startswith("::"):
            head, _, data = trimmed[2:].partition("::")
            name, _, props = head.partition(" ")
            pairs = dict(p.split("=", 1) for p in props.split(",") if "=" in p)
            found.append((name, {k: _unescape(v, True) for k, v in pairs.items()},
                          _unescape(data, False)))
        elif "##[" in line:
            found.append(("legacy", {}, line))
    return found


def _unescape(text: str, prop: bool) -> str:
    text = text.replace("%0D", "\r").replace("%0A", "\n")
    if prop:
        text = text.replace("%3A", ":").replace("%2C", ",")
    return text.replace("%25", "%")


def assert_inert_text(out: str) -> None:
    """Text output: no workflow command, no control character but the newlines ending the
    lines and the tabs of quoted source lines, no escape sequence."""
    assert runner_commands(out) == []
    bad = [ch for ch in set(out) if not (ch.isprintable() or ch in "\n\t")]
    assert bad == [], out


# ------------------------------------------------------------------ Markdown tables
def table_rows(out: str) -> list[list[str]]:
    """The rows of a GitHub-flavoured Markdown table: lines starting with ``|``, split at
    each ``|`` not escaped by a backslash (a ``\\\\`` escapes itself)."""
    rows = []
    for line in out.split("\n"):
        if not line.startswith("|"):
            continue
        cells, cell, i = [], "", 1
        while i < len(line):
            ch = line[i]
            if ch == "\\" and i + 1 < len(line):
                cell += line[i:i + 2]
                i += 2
                continue
            if ch == "|":
                cells.append(cell.strip())
                cell = ""
            else:
                cell += ch
            i += 1
        rows.append(cells)
    return rows


def cell_text(cell: str) -> str:
    """The text a reader sees in a table cell holding one code span or escaped text."""
    run_ = re.match("`+", cell)
    if run_:
        fence = run_.group()
        assert cell.endswith(fence) and len(cell) > 2 * len(fence), cell
        inner = cell[len(fence):-len(fence)]
        assert fence not in inner.replace(fence + "`", ""), cell
        if inner.startswith(" ") and inner.endswith(" ") and inner.strip(" "):
            inner = inner[1:-1]
        return inner.replace("\\|", "|")
    # text: a backslash escapes ASCII punctuation; an unescaped ` or < would start markup
    parts = re.split(r"(\\[!-/:-@\[-`{-~])", cell)
    raw = "".join(parts[0::2])
    assert "<" not in raw and "`" not in raw, cell
    text = "".join(p[1:] if i % 2 else p for i, p in enumerate(parts))
    return (text.replace("&lt;", "<").replace("&gt;", ">").replace("&#32;", " ")
            .replace("&amp;", "&"))


def strings(value: Any) -> list[str]:
    """Every string (keys and values) of a parsed JSON document."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def visible_ref(text: str, keep: str = "") -> str:
    """Python's ``repr`` escapes of the characters that are not printable (but ``keep``)."""
    return "".join(ch if ch.isprintable() or ch in keep else repr(ch)[1:-1] for ch in text)


# ------------------------------------------------------------------------ case 7
def test_case7_text_table_and_model_forge_no_github_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write_workspace(tmp_path / "ws", [
        (f"answer\n{FORGED}\n{SILENCE}\n\x1b[31mred", "main"),
        ("::warning::leading", "main"),
        ("x ##[error]legacy", "main")],
        model=f"gpt-4o\n{FORGED}\x1b]0;title\x07")
    code, out = run(capsys, "check", "ws", "--no-cache")
    assert code == 1
    assert_inert_text(out)
    # the step ids are shown, each on its own table row
    rows = [line for line in out.split("\n") if line.startswith("  ") and "NO" in line]
    assert len(rows) == 3
    assert ("answer\\n::error file=README.md,line=1::forged\\n::stop-commands::tok\\n"
            "\\x1b[31mred") in rows[0]


def test_case7_diff_text_and_markdown_keep_names_inert(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    steps = [(f"s\n{FORGED}\n| forged | row |", "main"), ("`code` <!-- hidden", "main"),
             ("a|b*c_d[e](f)\\|", "main")]
    write_workspace(tmp_path / "base", steps)
    write_workspace(tmp_path / "head", steps, prompt=PROMPT + " Quote the manual." * 20)
    code, text = run(capsys, "diff", str(tmp_path / "base"), str(tmp_path / "head"))
    assert code == 1  # every step is over budget at HEAD (already at BASE): diff fails as check
    assert_inert_text(text)
    _, md = run(capsys, "diff", str(tmp_path / "base"), str(tmp_path / "head"),
                "--format", "markdown")
    assert "<!--" not in md
    rows = table_rows(md)
    assert len(rows) == 2 + 3  # header, separator, one row per changed step
    assert all(len(r) == 8 for r in rows), rows
    assert [cell_text(r[2]) for r in rows[2:]] == [visible_ref(s) for s, _ in steps]


# ------------------------------------------------------------------------ case 8
def test_case8_junit_parses_with_control_characters_in_step_ids(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write_workspace(tmp_path / "ws", [("a\x01b\x0cc\x1bd", "main"), ("e\ufffef<&>", "main")])
    code, out = run(capsys, "check", "ws", "--no-cache", "--format", "junit")
    assert code == 1
    root = ET.fromstring(out)
    names = [case.get("name") for case in root.iter("testcase")]
    assert names == ["a\\x01b\\x0cc\\x1bd", "e\\ufffef<&>", "(file)"]


# ------------------------------------------------------------------------ case 9
def test_case9_gitlab_fingerprints_do_not_move_when_numbers_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write_workspace(tmp_path / "ws", [("answer", "main"), ("route", "main")])
    _, before = run(capsys, "check", "ws", "--no-cache", "--format", "gitlab")
    (tmp_path / "ws" / "prompts" / "main.txt").write_text(
        PROMPT + " Quote the manual." * 20, "utf-8")
    _, after = run(capsys, "check", "ws", "--no-cache", "--format", "gitlab")
    old, new = json.loads(before), json.loads(after)
    assert [i["check_name"] for i in old] == [i["check_name"] for i in new] == ["BL050"] * 2
    assert [i["description"] for i in old] != [i["description"] for i in new]  # numbers moved
    assert [i["fingerprint"] for i in new] == [i["fingerprint"] for i in old]
    assert len({i["fingerprint"] for i in new}) == 2


def test_the_clamp_listing_keeps_file_names_and_messages_inert(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write_workspace(tmp_path / "ws", [("answer", "main"), ("b", f"x\n{FORGED}")],
                    pipeline=f"p\n{SILENCE}.yaml")
    _, out = run(capsys, "clamp", "ws")
    assert_inert_text(out)
    assert "ws/pipelines/p\\n::stop-commands::tok.yaml:2:23: settings.max_context_tokens" in out
    assert "prompt file ws/prompts/x\\n::error file=README.md,line=1::forged.txt" in out


# --------------------------------------------------------- non-UTF-8 file names
@pytest.mark.parametrize("fmt", ["text", "github", "junit", "gitlab", "sarif", "json"])
def test_a_file_name_that_is_not_utf8_prints_in_every_format(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    monkeypatch.chdir(tmp_path)
    write_workspace(tmp_path / "ws", [("answer", "main")], pipeline="bad\udcff\n::x::.yaml")
    code, out = run(capsys, "check", "ws", "--no-cache", "--format", fmt)
    assert code == 1  # the step is over budget (development: fail_fast)
    if fmt in ("gitlab", "sarif", "json"):
        assert any("bad\\xff" in text for text in strings(json.loads(out)))
    else:
        assert "bad\\xff" in out
    if fmt == "junit":
        ET.fromstring(out)
    elif fmt == "text":
        assert_inert_text(out)
    elif fmt == "github":
        ((name, props, _),) = runner_commands(out)
        assert (name, props["file"]) == ("error", "ws/pipelines/bad\\xff\n::x::.yaml")


def test_the_text_of_a_diff_of_folders_with_a_non_utf8_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write_workspace(tmp_path / "base", [("answer", "main")], pipeline="b\udcfe.yaml")
    shutil.copytree(os.fsencode(tmp_path / "base"), os.fsencode(tmp_path / "head"))
    (tmp_path / "head" / "prompts" / "main.txt").write_text(PROMPT + " More." * 9, "utf-8")
    _, out = run(capsys, "diff", "base", "head")
    assert "b\\xfe.yaml" in out
    _, out = run(capsys, "diff", "base", "head", "--format", "json")
    assert "pipelines/b\\xfe.yaml" in strings(json.loads(out))
    _, md = run(capsys, "diff", "base", "head", "--format", "markdown")
    (row,) = table_rows(md)[2:]
    assert cell_text(row[1]) == "pipelines/b\\xfe.yaml"


# ------------------------------------------------------------------ the property
#: Pieces of what an attacker writes: line breaks, controls, escapes, workflow commands,
#: percent escapes, Markdown and HTML.
PIECES = ["\n", "\r", "\t", "\x00", "\x01", "\x1b[31m", "\x7f", "\x85", "\u2028", "\ufeff",
          "\ufffe", "::", FORGED, SILENCE, "##[error]x", "%", "%0A", "%3A", "`", "``", "<!--",
          "-->", "|", "\\", "*", "_", "[", "](", "<", ">", "&", ",", ":", " ", "a", "é", "日"]
#: Pieces of a file name: no "/" and no NUL; a lone surrogate is a byte that is not UTF-8.
NAME_PIECES = ["\n", "\x1b", "::", "::error::f", "##[", "%", "`", "<!--", "|", ",", ":", " ",
               "a", "é", "\udcff", "\udc80"]

pieces = st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map("".join)
file_names = st.lists(st.sampled_from(NAME_PIECES), min_size=1, max_size=4).map(
    lambda parts: "".join(parts) + ".yaml")


@st.composite
def workspaces(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(pieces, min_size=1, max_size=3, unique=True))
    return {"ids": ids, "model": draw(st.none() | pieces), "pipeline": draw(file_names),
            "bad_key": draw(pieces), "grow": draw(st.integers(1, 30))}


def _make(root: Path, case: dict[str, Any], prompt: str = PROMPT) -> Path:
    steps = [(i, "main") for i in case["ids"]] + [("missing", case["bad_key"])]
    return write_workspace(root, steps, model=case["model"], pipeline=case["pipeline"],
                           prompt=prompt)


def _grown(case: dict[str, Any]) -> str:
    return PROMPT + " Quote the manual." * case["grow"]


RUNNER_NAME = {"error": "error", "warning": "warning", "information": "notice",
               "hint": "notice"}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=workspaces())
def test_every_check_format_carries_only_what_budgetlens_meant(
        case: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path_factory.mktemp("out")
    monkeypatch.chdir(home)
    _make(home / "ws", case)
    check = ("check", "ws", "--no-cache", "--format")
    _, js = run(capsys, *check, "json")
    meant = json.loads(js)["diagnostics"]
    # github: exactly one command per diagnostic, each the one meant
    _, gh = run(capsys, *check, "github")
    commands = runner_commands(gh)
    assert Counter((name, p.get("title"), p.get("file"), p.get("line"), p.get("col"), data)
                   for name, p, data in commands) == Counter(
        (RUNNER_NAME[d["severity"]], d["code"], visible_ref(d["file"], "\r\n"),
         str(d["range"]["start"]["line"] + 1), str(d["range"]["start"]["character"] + 1),
         visible_ref(d["message"], "\r\n")) for d in meant)
    _, text = run(capsys, *check, "text")
    assert_inert_text(text)
    _, junit = run(capsys, *check, "junit")
    cases = list(ET.fromstring(junit).iter("testcase"))
    assert len(cases) == len(case["ids"]) + 2  # the steps, "missing" and (file)
    _, gitlab = run(capsys, *check, "gitlab")
    _, sarif = run(capsys, *check, "sarif")
    before = ([i["fingerprint"] for i in json.loads(gitlab)],
              [r["partialFingerprints"] for r in json.loads(sarif)["runs"][0]["results"]])
    # only numbers change: the prompt of every step grows
    (home / "ws" / "prompts" / "main.txt").write_text(_grown(case), "utf-8")
    _, gitlab = run(capsys, *check, "gitlab")
    _, sarif = run(capsys, *check, "sarif")
    after = ([i["fingerprint"] for i in json.loads(gitlab)],
             [r["partialFingerprints"] for r in json.loads(sarif)["runs"][0]["results"]])
    assert after == before
    assert len(set(after[0])) == len(after[0])


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=workspaces())
def test_the_diff_table_has_exactly_the_rows_meant(
        case: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path_factory.mktemp("diff")
    monkeypatch.chdir(home)
    _make(home / "base", case)
    _make(home / "head", case, prompt=_grown(case))
    _, text = run(capsys, "diff", "base", "head")
    assert_inert_text(text)
    _, md = run(capsys, "diff", "base", "head", "--format", "markdown")
    assert "<!--" not in md
    rows = table_rows(md)
    # every step with the grown prompt changed; "missing" (no prompt) did not, but its
    # error (BL040 on both sides) gives it a row of its own, last
    assert len(rows) == 3 + len(case["ids"])
    assert all(len(r) == 8 for r in rows), md
    assert [cell_text(r[2]) for r in rows[2:-1]] == [visible_ref(i) for i in case["ids"]]
    assert rows[-1][0] == "unchanged" and cell_text(rows[-1][2]) == "missing"
