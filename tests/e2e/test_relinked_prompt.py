"""A prompt file that is a symbolic link leaving the workspace is BL041 and is not read; the
editor relinks it into the workspace (the same bytes) and the diagnostic goes (found after
stop 23: the server's report cache kept the stale BL041, as the CLI's result cache did)."""

from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types

from .harness import Editor, codes_of, running_server


def relinked(ed: Editor, link: Path, target: Path) -> None:
    """Point ``link`` at ``target`` and tell the server, as an editor's file watcher does:
    the event names the link (``Editor.uri`` would name where it points)."""
    link.unlink()
    os.symlink(target, link)
    uri = (ed.root.resolve() / link.relative_to(ed.root)).as_uri()
    ed.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=uri, type=types.FileChangeType.Changed)]))


async def test_a_prompt_relinked_from_outside_into_the_workspace(workspace: Path) -> None:
    prompt = workspace / "prompts" / "chat.txt"
    text = prompt.read_bytes()
    outside = workspace.parent / "outside-chat.txt"
    inside = workspace / "kept" / "chat.txt"
    inside.parent.mkdir()
    outside.write_bytes(text)
    inside.write_bytes(text)
    prompt.unlink()
    os.symlink(outside, prompt)
    async with running_server(workspace) as ed:
        chat = ed.uri("pipelines/chat.yaml")
        [d] = [d for d in await ed.wait_diagnostics(chat, lambda ds: "BL041" in codes_of(ds))
               if d.code == "BL041"]
        assert "outside the workspace root" in d.message
        relinked(ed, prompt, inside)
        await ed.wait_diagnostics(chat, lambda ds: "BL041" not in codes_of(ds))
        relinked(ed, prompt, outside)  # and back out: the error again
        await ed.wait_diagnostics(chat, lambda ds: "BL041" in codes_of(ds))
