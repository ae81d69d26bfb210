"""What the CLI does with inputs that resolve outside the workspace, and a file swapped
for a FIFO mid-check (a reviewer's reproductions after stop 23; each failed on 2938c74)."""

from __future__ import annotations

import builtins
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from budgetlens.contract.cache import RecordingFiles
from budgetlens.files import DiskFiles, NotAFile, RunFiles
from budgetlens_cli.cache_store import ContentHashes, HashingFiles
from budgetlens_cli.main import main
from tests.outside_links import BASE, CHILD, CONFIG, extends_outside, relink


def test_extends_parent_relinked_into_the_workspace_cli_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    ws, link, _, inside = extends_outside(tmp_path)
    monkeypatch.chdir(ws)
    monkeypatch.delenv("BUDGETLENS_NO_CACHE", raising=False)
    main(["check", "pipelines/p.yaml"])
    assert "BL022" in capsys.readouterr().out
    relink(link, inside)
    main(["check", "--no-cache", "pipelines/p.yaml"])
    fresh = capsys.readouterr().out
    main(["check", "pipelines/p.yaml"])
    assert capsys.readouterr().out == fresh

def test_a_refused_outside_tokenizer_json_is_not_read_by_the_result_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    (ws / "pipelines").mkdir(parents=True)
    (ws / "prompts").mkdir()
    (ws / "config.json").write_text(CONFIG[:-1] + ', "tokenizer": "tok/tokenizer.json"}')
    (ws / "prompts" / "sys.txt").write_text("hi\n")
    (ws / "pipelines" / "q.yaml").write_text(BASE + CHILD.split("\n", 1)[1])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "tokenizer.json").write_text('{"secret": 1}')
    os.symlink(outside, ws / "tok")
    monkeypatch.chdir(ws)
    monkeypatch.delenv("BUDGETLENS_NO_CACHE", raising=False)
    opened: list[str] = []
    real = builtins.open

    def spying(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, os.PathLike)):
            opened.append(os.path.realpath(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spying)
    main(["check", "pipelines/q.yaml"])
    assert "BL014" in capsys.readouterr().out
    assert str((outside / "tokenizer.json").resolve()) not in opened


class _Blocked(BaseException):
    pass


def test_a_fifo_put_between_fingerprint_and_read_is_refused_not_opened(tmp_path: Path) -> None:
    prompt = tmp_path / "p.txt"
    prompt.write_text("text\n")
    source = RecordingFiles(RunFiles(HashingFiles(ContentHashes(
        lambda s: DiskFiles().fingerprint(Path(s))))))
    source.fingerprint(str(prompt))
    prompt.unlink()
    os.mkfifo(prompt)

    def on_alarm(*_: object) -> None:
        raise _Blocked("open() of the FIFO blocked for 2 s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(2)
    try:
        with pytest.raises(NotAFile):  # what DiskFiles (--no-cache) says
            source.read_text(prompt)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)

def test_cli_text_output_does_not_quote_a_pipeline_outside_the_workspace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    (ws / "pipelines").mkdir(parents=True)
    (ws / "config.json").write_text(CONFIG)
    secret = tmp_path / "secret.yaml"
    secret.write_text("TOP-SECRET-LINE: 1\n")
    os.symlink(secret, ws / "pipelines" / "q.yaml")
    monkeypatch.chdir(ws)
    main(["check", "--no-cache", "pipelines/q.yaml"])
    out = capsys.readouterr().out
    assert "BL007" in out
    assert "TOP-SECRET-LINE" not in out
