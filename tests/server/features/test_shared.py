"""``commands.command_target``: what a command may read (open documents, files inside the
workspace folders with symlinks resolved) and the error naming the rule for the rest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from budgetlens_lsp.features.commands import READ_RULE, command_target, outside_reason
from budgetlens_lsp.features.json_documents import CommandError


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    (ws / "data").mkdir(parents=True)
    (ws / "data" / "in.json").write_text('{"a": 1', "utf-8")
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "s.json").write_text('{"secret": "x"}', "utf-8")
    os.symlink(outside / "s.json", ws / "data" / "link.json")
    os.symlink(outside, ws / "dirlink")
    return ws, outside


def refused(uri: str, roots: list[str], documents: dict[str, str] | None = None) -> str:
    with pytest.raises(CommandError) as info:
        command_target(uri, documents or {}, roots)
    message = str(info.value)
    assert message.startswith(uri) and message.endswith(READ_RULE)
    return message


def test_a_file_inside_the_workspace_is_allowed(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    path = ws / "data" / "in.json"
    assert command_target(path.as_uri(), {}, [str(ws)]) == str(path)


def test_open_documents_are_allowed_wherever_they_are(tree: tuple[Path, Path]) -> None:
    ws, outside = tree
    uri = (outside / "s.json").as_uri()
    key = str(outside / "s.json")
    assert command_target(uri, {uri: key}, [str(ws)]) == key
    assert command_target("untitled:Untitled-1", {"untitled:Untitled-1": "untitled:Untitled-1"},
                          [str(ws)]) == "untitled:Untitled-1"
    # the same file named by an equivalent URI is still the open buffer
    assert command_target(uri.replace("s.json", "%73.json"), {uri: key}, [str(ws)],
                          {key}) == key


def test_paths_out_of_the_workspace_are_refused(tree: tuple[Path, Path]) -> None:
    ws, outside = tree
    roots = [str(ws)]
    base = ws.as_uri()
    assert "'..' segment" in refused(f"{base}/../secret/s.json", roots)
    assert "'..' segment" in refused(f"{base}/%2e%2e/secret/s.json", roots)
    assert "'..' segment" in refused(f"{base}/%2E%2E/secret/s.json", roots)
    assert "'..' segment" in refused(f"{base}/data%2f..%2f..%2fsecret/s.json", roots)
    assert "is outside the workspace folders" in refused((outside / "s.json").as_uri(), roots)
    assert "is outside the workspace folders" in refused("file:///etc/passwd", roots)
    assert "through a symlink" in refused(f"{base}/data/link.json", roots)
    assert "through a symlink" in refused(f"{base}/dirlink/s.json", roots)
    assert "not an open document and not a file: URI" in refused("untitled:Nope", roots)
    assert "not a valid path" in refused(f"{base}/data/in.json%00.txt", roots)
    # no workspace folder: nothing on disk may be read
    assert "the client opened none" in refused((ws / "data" / "in.json").as_uri(), [])


def test_the_example_message_reads_as_a_sentence() -> None:
    with pytest.raises(CommandError) as info:
        command_target("file:///etc/x.json", {}, ["/nonexistent-ws"])
    assert str(info.value) == ("file:///etc/x.json is outside the workspace folders;"
                               " budgetlens reads only open documents and files inside the"
                               " workspace folders")


def test_a_workspace_folder_that_is_itself_a_symlink_works(tree: tuple[Path, Path],
                                                            tmp_path: Path) -> None:
    ws, _ = tree
    alias = tmp_path / "alias"
    os.symlink(ws, alias)
    assert outside_reason(str(alias / "data" / "in.json"), [str(alias)]) is None
    assert outside_reason(str(alias / "data" / "link.json"), [str(alias)]) is not None
