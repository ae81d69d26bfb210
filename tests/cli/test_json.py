"""``budgetlens contexts`` and ``budgetlens merge``, in process and once as a real process."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from budgetlens_cli.main import main
from tests.waiting import HANG_GUARD

CUT = '{"document": {"sections": [{"id": 1}, {"content": "Hello wor'


def _write(tmp_path: Path, name: str, data: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return str(path)


def test_contexts_json_has_the_documented_keys(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "cut.json", CUT)
    assert main(["contexts", path, "--format", "json", "--budget", "200"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["json_parsing_success"] is True
    assert data["complete_part"] == CUT + '"}]}}'
    assert data["hierarchy_context"] == CUT
    assert data["overlap_context"] == CUT[-48:]
    assert data["cut"]["offset"] == len(CUT)
    assert (data["cut"]["line"], data["cut"]["character"]) == (0, len(CUT))
    assert data["cut"]["path"] == ["document", "sections", 1, "content"]
    assert data["cut"]["path_text"] == "document.sections[1].content"
    assert data["hierarchy_context_for_prompt"].endswith('"content": "Hello wor<<<CUT>>>')
    assert data["budget"] == 200


def test_contexts_text_format_and_marker(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "cut.json", CUT)
    assert main(["contexts", path, "--marker", "@@", "--closed"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cut inside a string at document.sections[1].content\n"
                          f"position: line 1, column {len(CUT) + 1} (offset {len(CUT)})\n")
    assert '"content": "Hello wor@@' in out
    assert "--- complete part ---\n" + CUT + '"}]}}' in out


def test_contexts_reads_standard_input(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"[1, 2")))
    assert main(["contexts", "-", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["complete_part"] == "[1, 2]"


def test_contexts_on_a_text_cut_inside_a_utf8_character(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = '["caf€'.encode()[:-1]  # the euro sign's last byte is missing
    path = _write(tmp_path, "bytes.json", data)
    assert main(["contexts", path, "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["complete_part"] == '["caf"]'
    assert result["dropped_incomplete_bytes"] == 2


@pytest.mark.parametrize(("data", "message"), [
    (b"", "empty text: no JSON value"),
    (b"I am sorry, I cannot do that.", "no JSON value found"),
    (b"[1,,2]", "invalid JSON at line 1, character 4: expected a value, found ','"),
])
def test_contexts_on_input_that_is_not_json(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str],
                                            data: bytes, message: str) -> None:
    path = _write(tmp_path, "bad.json", data)
    assert main(["contexts", path]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith(message)
    assert "Traceback" not in captured.err


def test_contexts_on_binary_and_missing_files(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "blob.bin", b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    assert main(["contexts", path]) == 2
    assert "not UTF-8 text (byte 0)" in capsys.readouterr().err
    assert main(["contexts", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["contexts", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_contexts_refuses_a_huge_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    import budgetlens_cli.io as cli_io

    monkeypatch.setattr(cli_io, "MAX_INPUT_BYTES", 10)
    path = _write(tmp_path, "big.json", "[" + "1," * 20)
    assert main(["contexts", path]) == 2
    assert "larger than" in capsys.readouterr().err


def test_contexts_bad_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "cut.json", CUT)
    assert main(["contexts", path, "--budget", "-5"]) == 2
    assert "must be >= 0" in capsys.readouterr().err


def test_merge_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _write(tmp_path, "base.json", CUT)
    fragment = _write(tmp_path, "frag.json", '"Hello world"}]}}')
    assert main(["merge", base, fragment, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {"merged": CUT[:-10] + '"Hello world"}]}}', "has_overlap": True,
                    "overlap_length": 10, "restarted": False}
    json.loads(data["merged"])


def test_merge_text_and_no_overlap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _write(tmp_path, "base.json", "[1, 2")
    fragment = _write(tmp_path, "frag.json", "2, 3]\n")
    assert main(["merge", base, fragment]) == 0
    assert capsys.readouterr().out == "[1, 2, 3]\n"
    other = _write(tmp_path, "other.json", "xyz")
    assert main(["merge", base, other]) == 1
    captured = capsys.readouterr()
    assert "no overlap found" in captured.err


def test_merge_refuses_two_stdins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["merge", "-", "-"]) == 2
    assert "only one of BASE and FRAGMENT" in capsys.readouterr().err


def test_real_process_with_standard_input(tmp_path: Path) -> None:
    fragment = _write(tmp_path, "frag.json", "wor" + 'ld"}]}}')
    proc = subprocess.run(
        [sys.executable, "-m", "budgetlens_cli", "merge", "-", fragment,
         "--format", "json"],
        input=CUT.encode(), capture_output=True, timeout=HANG_GUARD, check=False)
    assert proc.returncode == 0, proc.stderr
    merged = json.loads(proc.stdout)["merged"]
    assert json.loads(merged) == {"document": {"sections": [{"id": 1},
                                                            {"content": "Hello world"}]}}
    proc = subprocess.run(
        [sys.executable, "-m", "budgetlens_cli", "contexts", "-"],
        input=CUT.encode(), capture_output=True, timeout=HANG_GUARD, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().startswith("cut inside a string at document.sections[1].content")
