"""Showing a command's result in any client, through the spec.

``budgetlens.showHierarchyContext`` and ``budgetlens.showBudgetReport`` return data that
the project's own clients (VS Code, the Neovim plugin) display; they say so with the
initialization option ``displaysCommandResults: true``. For every other client (eglot,
lsp-mode, ALE, Helix, ...) the server shows the result itself:

1. it writes the result as a read-only file in a per-user cache folder (:func:`views_dir`:
   ``$XDG_CACHE_HOME/budgetlens/views``, else ``~/.cache/budgetlens/views``; on macOS
   ``~/Library/Caches/budgetlens/views``; on Windows ``%LOCALAPPDATA%\\budgetlens\\views``),
   one file per source document and kind (written again on every run). The folder must be
   a private folder of the user, never a link (``usercache.private_folder``); a view is a
   new file renamed over its name, so a link or a file planted there is replaced, never
   followed;
2. it asks the client to open it with ``window/showDocument`` when the client declared
   ``window.showDocument.support``;
3. otherwise, or when the client did not open it, it sends the text with
   ``window/showMessage`` (cut to :data:`MAX_MESSAGE` characters, naming the file).

The command's response is sent first; the showing happens after it (a client that handles
server requests only between its own requests is never blocked).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types

from budgetlens import usercache
from budgetlens_lsp.features.state import ServerState

log = logging.getLogger(__name__)

#: Characters of a result sent in a ``window/showMessage`` (the file has all of it).
MAX_MESSAGE = 4000
#: Seconds to wait for the client's answer to ``window/showDocument``.
SHOW_TIMEOUT = 5
_tasks: set[asyncio.Task[None]] = set()


@dataclass(frozen=True)
class View:
    """A command's result as a document: ``kind`` names the command, ``source`` the
    document it is about."""

    kind: str  # "hierarchy" | "report"
    source: str
    text: str
    suffix: str  # ".txt" | ".md"
    title: str


def views_dir(environ: dict[str, str] | None = None, platform: str = sys.platform) -> Path:
    """The per-user folder for generated views (never inside a workspace)."""
    env = os.environ if environ is None else environ
    if platform.startswith("win"):
        base = env.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData",
                                                       "Local")
        return Path(base) / "budgetlens" / "views"
    if platform == "darwin" and not env.get("XDG_CACHE_HOME"):
        return Path(os.path.expanduser("~")) / "Library" / "Caches" / "budgetlens" / "views"
    xdg = env.get("XDG_CACHE_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"),
                                                               ".cache")
    return Path(base) / "budgetlens" / "views"


def hierarchy_view(source: str, result: dict[str, Any]) -> View:
    """``showHierarchyContext``'s result as text: what was cut where, then the context with
    the cut marked."""
    name = os.path.basename(source)
    lines = [f"budgetlens: hierarchy context of {name} ({source})",
             f"budget: {result.get('budget')} characters of values shown in full"]
    cut, error = result.get("cut"), result.get("error")
    if error:
        lines.append(f"not a prefix of JSON: {error.get('message')} at line"
                     f" {error.get('line', 0) + 1}")
    elif cut is None:
        lines.append("the JSON is complete: nothing was cut")
    else:
        lines.append(f"cut: {result.get('description')} (line {cut['line'] + 1}, character"
                     f" {cut['character'] + 1}); the cut is marked {result.get('marker')}")
    lines += ["", str(result.get("text") or "")]
    return View("hierarchy", source, "\n".join(lines).rstrip("\n") + "\n", ".txt",
                f"budgetlens: hierarchy context of {name}")


def report_view(source: str, result: dict[str, Any]) -> View:
    """``showBudgetReport``'s result as Markdown (the table in a text block)."""
    name = os.path.basename(source)
    text = str(result.get("text") or "").rstrip("\n")
    body = f"# budgetlens budget report: {name}\n\n`{source}`\n\n```text\n{text}\n```\n"
    return View("report", source, body, ".md", f"budgetlens: budget report of {name}")


def write_view(view: View, folder: Path | None = None) -> Path:
    """Write ``view`` read-only into ``folder`` (default :func:`views_dir`); its path.
    ``OSError`` when it cannot be written, or when the folder is not one only this user
    writes (a link, another user's: ``usercache.private_folder``). The file is new, made
    whole, then renamed over its name: a link or a planted file there is replaced, never
    followed or changed."""
    folder = folder or views_dir()
    private = usercache.private_folder(str(folder))
    if private is None:
        raise OSError(f"{folder} is not a private folder of yours (a link, a file or another"
                      " user's)")
    digest = hashlib.blake2b(view.source.encode("utf-8", "surrogatepass"),
                             digest_size=4).hexdigest()
    stem = "".join(c if c.isalnum() or c in "-_." else "_"
                   for c in Path(view.source).stem)[:60] or "document"
    target = folder / f"{view.kind}-{stem}-{digest}{view.suffix}"
    fd, tmp = tempfile.mkstemp(dir=private, prefix=".view-", suffix=view.suffix)
    try:
        # a name that is not UTF-8 (surrogate escapes) is shown escaped, as \udcff
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace",
                       newline="\n") as fh:
            fh.write(view.text)
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), stat.S_IRUSR | stat.S_IRGRP)
        if not hasattr(os, "fchmod"):  # Windows: by name (the new file), and the old one's
            os.chmod(tmp, stat.S_IRUSR | stat.S_IRGRP)
            if target.exists():  # Windows will not replace a read-only file
                os.chmod(target, stat.S_IRUSR | stat.S_IWUSR)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def show(ctx: ServerState, view: View) -> None:
    """Show ``view`` in the client unless it displays command results itself (module
    docstring); runs after the command's response."""
    if ctx.client.displays_results:
        return
    try:
        path: Path | None = write_view(view)
    except OSError as exc:
        log.warning("cannot write the view of %s: %s", view.source, exc)
        path = None
    task = asyncio.get_running_loop().create_task(_present(ctx, view, path))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


async def _present(ctx: ServerState, view: View, path: Path | None) -> None:
    if path is not None and ctx.client.show_document:
        try:
            result = await asyncio.wait_for(ctx.server.window_show_document_async(
                types.ShowDocumentParams(uri=path.as_uri(), take_focus=True)), SHOW_TIMEOUT)
            if result.success:
                return
        except Exception as exc:
            log.warning("window/showDocument of %s failed: %s", path, exc)
    text = view.text
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + "\n…"
    where = f"\n(the full text: {path})" if path is not None else ""
    ctx.message(f"{view.title}\n\n{text}{where}", types.MessageType.Info)
