"""A prompt file that is a symbolic link leaving the workspace is BL041 and is not read; the
editor relinks it into the workspace (the same bytes) and the diagnostic goes (found after
stop 23: the server's report cache kept the stale BL041, as the CLI's result cache did)."""

from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types

from .harness import Editor, codes_of, running_server


def told(ed: Editor, path: Path) -> None:
    """Tell the server that ``path`` changed, as an editor's file watcher does: the event
    names ``path`` as it is written (``Editor.uri`` would name where it leads)."""
    uri = (ed.root.resolve() / path.relative_to(ed.root)).as_uri()
    ed.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=uri, type=types.FileChangeType.Changed)]))


def relinked(ed: Editor, link: Path, target: Path) -> None:
    """Point ``link`` at ``target`` and tell the server, as an editor's file watcher does:
    the event names the link (``Editor.uri`` would name where it points)."""
    link.unlink()
    os.symlink(target, link)
    told(ed, link)


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


async def test_a_prompt_relinked_outside_to_a_hard_link_of_the_same_file(workspace: Path
                                                                         ) -> None:
    """The same file on both sides (a hard link): its stat does not change, only where the
    link leads. The server's report cache is keyed by where the inputs lie too (found by a
    review of the CLI's result cache, review25: the core's cache had the same gap)."""
    prompt = workspace / "prompts" / "chat.txt"
    inside = workspace / "kept" / "chat.txt"
    inside.parent.mkdir()
    os.replace(prompt, inside)
    outside = workspace.parent / "outside-chat.txt"
    os.link(inside, outside)
    os.symlink(inside, prompt)
    async with running_server(workspace) as ed:
        chat = ed.open("pipelines/chat.yaml")  # published, with no diagnostic
        await ed.wait_diagnostics(chat, lambda ds: "BL041" not in codes_of(ds))
        relinked(ed, prompt, outside)
        [d] = [d for d in await ed.wait_diagnostics(chat, lambda ds: "BL041" in codes_of(ds))
               if d.code == "BL041"]
        assert "outside the workspace root" in d.message
        relinked(ed, prompt, inside)  # and back in: the error goes
        await ed.wait_diagnostics(chat, lambda ds: "BL041" not in codes_of(ds))


async def test_a_prompt_folder_moved_outside_and_linked_back(workspace: Path) -> None:
    """The prompts folder moved out of the workspace (a rename: the same files, their stats
    unchanged) and a link left in its place: the prompt resolves outside (BL041) though
    neither it nor its name is a link; moved back, the error goes. The server's report
    cache is keyed by the inputs' real paths (before: by each file's own link only)."""
    folder = workspace / "prompts"
    moved = workspace.parent / "elsewhere"
    async with running_server(workspace) as ed:
        chat = ed.open("pipelines/chat.yaml")
        await ed.wait_diagnostics(chat, lambda ds: "BL041" not in codes_of(ds))
        os.rename(folder, moved)
        os.symlink(moved, folder)
        told(ed, folder / "chat.txt")
        [d] = [d for d in await ed.wait_diagnostics(chat, lambda ds: "BL041" in codes_of(ds))
               if d.code == "BL041"]
        assert "outside the workspace root" in d.message
        folder.unlink()
        os.rename(moved, folder)
        told(ed, folder / "chat.txt")
        await ed.wait_diagnostics(chat, lambda ds: "BL041" not in codes_of(ds))


async def test_an_open_buffer_of_a_linked_prompt_s_file_beats_the_disk(workspace: Path
                                                                        ) -> None:
    """The prompt is a link to a file inside the workspace; the user opens that file by
    its own name and types into it, unsaved: the pipeline reading the link counts the
    buffer, not the disk, and goes back to the disk when the buffer is closed (the index
    knows an input by its real path too; before, by the link's name only)."""
    prompt = workspace / "prompts" / "chat.txt"
    kept = workspace / "kept" / "chat.txt"
    kept.parent.mkdir()
    os.replace(prompt, kept)
    os.symlink(kept, prompt)
    async with running_server(workspace) as ed:
        chat = ed.open("pipelines/chat.yaml")
        before = codes_of(await ed.wait_diagnostics(chat, lambda ds: True))
        assert "BL052" not in before
        buffer = ed.open("kept/chat.txt", language_id="plaintext")
        ed.replace_all(buffer, "budget " * 20_000)
        await ed.wait_diagnostics(chat, lambda ds: "BL052" in codes_of(ds))
        ed.close(buffer)
        await ed.wait_diagnostics(chat, lambda ds: "BL052" not in codes_of(ds))


async def test_a_prompt_changed_on_disk_through_a_link_no_pipeline_reads(workspace: Path
                                                                         ) -> None:
    """The pipeline reads prompts/chat.txt by its own name; the user writes it through a
    link to its folder elsewhere in the workspace, and the watcher names the link's path:
    the pipeline is checked again (before, no report read that name: nothing was)."""
    alias = workspace / "alias"
    os.symlink(workspace / "prompts", alias)
    async with running_server(workspace) as ed:
        chat = ed.open("pipelines/chat.yaml")
        assert "BL052" not in codes_of(await ed.wait_diagnostics(chat, lambda ds: True))
        # a request is answered once the first index is done (it would re-check the pipeline
        # on its own, the prompt's stat changed)
        await ed.client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=chat)))
        (alias / "chat.txt").write_text("budget " * 20_000, "utf-8")
        told(ed, alias / "chat.txt")
        await ed.wait_diagnostics(chat, lambda ds: "BL052" in codes_of(ds))
