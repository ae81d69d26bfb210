"""Symbolic links in the workspace: which names lead to which files, for the index.

A pipeline may read a prompt (or config.json, a parent pipeline, ...) through a symbolic
link. The editor and the file watcher may name either side. So the index must know both:

- **links**: for each pipeline, the (name, real path) of each link its report read through.
  An edit of the real file re-checks the readers of the link, and the other way round.
- **chains**: the links a link leads through to its file (``a -> b -> c``), so a watcher
  event for a middle link (``b`` retargeted) finds the readers too.
- **buffer real paths**: each open buffer's real path, resolved when it opens, when it
  changes (its link may lead elsewhere now) and on a rediscovery. Not at every keystroke.
- **aliases**: an open buffer under the other names of its file (its real path, the links
  that reports read), so a buffer beats the disk whatever name a pipeline reads it by.

:class:`LinkTracker` keeps all four. ``WorkspaceIndex`` owns one and asks it; the index
itself never calls ``realpath`` or ``readlink``. Everything here runs on the analysis
thread.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping

#: (name, real path) of each link a report read through.
Links = tuple[tuple[str, str], ...]


def real_path(path: str) -> str:
    """``os.path.realpath(path)``; a path with a NUL (which names no file) is its own."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def chain_of(name: str, hops: int = 40) -> tuple[str, ...]:
    """The symbolic links the link ``name`` leads through to its file (none when ``name``
    is no link, or leads straight to it), each named as the link before it names it (its
    target joined to that link's folder): where a file watcher reports a change of one."""
    chain: list[str] = []
    at = name
    for _ in range(hops):
        try:
            at = os.path.normpath(os.path.join(os.path.dirname(at), os.readlink(at)))
            if not stat.S_ISLNK(os.lstat(at).st_mode):
                break
        except (OSError, ValueError):  # no link (any more), or a NUL
            break
        chain.append(at)
    return tuple(chain)


class LinkTracker:
    """The links reports read, the open buffers' real paths and their aliases (see the
    module docstring). ``analyzed``: the suffixes of the buffers the index analyses."""

    def __init__(self, analyzed: tuple[str, ...]) -> None:
        self._analyzed = analyzed
        #: pipeline -> (name, real path) of each symbolic link its report read through
        self.by_pipeline: dict[str, Links] = {}
        #: this update's open buffers under the other names of their files
        self.aliased: dict[str, str] = {}
        #: open buffer -> its file's real path (see :meth:`track_buffers`)
        self._buffer_reals: dict[str, str] = {}
        #: this update's open buffers by their files' real paths
        self._open_by_real: dict[str, str] = {}
        #: the links a linked input leads through (:func:`chain_of`), for one update
        self._chains: dict[str, tuple[str, ...]] = {}

    # --- one update ----------------------------------------------------------------------
    def start_update(self, overlay: Mapping[str, str], changed: frozenset[str],
                     closed: frozenset[str], rediscover: bool) -> frozenset[str]:
        """Resolve the buffers (:meth:`track_buffers`) and make the aliases; the real paths
        whose readers must be checked again."""
        self._chains = {}
        moved = self.track_buffers(overlay, changed, closed, rediscover)
        self.aliased = self._aliases({p: t for p, t in overlay.items()
                                      if p.endswith(self._analyzed)})
        return moved

    def end_checks(self) -> None:
        """The checks of an update are over: no chain is kept across updates."""
        self._chains = {}

    def track_buffers(self, overlay: Mapping[str, str], changed: frozenset[str],
                      closed: frozenset[str], rediscover: bool) -> frozenset[str]:
        """Keep each open buffer's real path, resolved when it opens, when it is among
        ``changed`` (its link may lead elsewhere now) and on an update that rediscovers;
        the real paths, before and after, of the changed and closed buffers opened through
        a link, whose readers by those names are checked again."""
        old = {} if rediscover else self._buffer_reals
        reals: dict[str, str] = {}
        moved: set[str] = set()
        for path in overlay:
            real = old.get(path)
            if real is None or path in changed:
                new = real_path(path)
                if real is not None and new != real:
                    moved.add(real)  # retargeted: the file it led to reads the disk again
                real = new
            reals[path] = real
        for path in changed | closed:
            for real in (old.get(path), reals.get(path)):
                if real is not None and real != path:
                    moved.add(real)
        self._buffer_reals = reals
        return frozenset(moved)

    def _aliases(self, overlay: Mapping[str, str]) -> dict[str, str]:
        """The open buffers under the other names of their files: a buffer opened through a
        link under its file's real path, and under the names of the symbolic links to its
        file that reports read (each checked to lead there now)."""
        by_real: dict[str, str] = {}
        out: dict[str, str] = {}
        for path in overlay:
            real = self._buffer_reals.get(path, path)
            if real == path or real not in by_real:
                by_real[real] = path
            if real != path and real not in overlay:
                out[real] = overlay[path]
        self._open_by_real = by_real
        for pairs in self.by_pipeline.values():
            for name, real in pairs:
                buffer = by_real.get(real)
                if buffer is not None and name not in overlay and name not in out \
                        and real_path(name) == real:
                    out[name] = overlay[buffer]
        return out

    def learn(self, links: Links, overlay: Mapping[str, str]) -> bool:
        """Whether a report read an open buffer's file from the disk through a symbolic
        link this update did not know of (``links``: its (name, real path) pairs; the
        buffer was open before any report read the link): its name joins the aliases, for
        a check again (the caller makes its file sources again)."""
        learned = False
        for name, real in links:
            if name in overlay or name in self.aliased:
                continue
            buffer = self._open_by_real.get(real)
            if buffer is not None and buffer.endswith(self._analyzed):
                self.aliased[name] = overlay[buffer]
                learned = True
        return learned

    # --- readers ---------------------------------------------------------------------------
    def is_open_real(self, path: str) -> bool:
        """Whether ``path`` is an open buffer's real path (resolved)."""
        return path in self._open_by_real

    def real_names_of(self, name: str, readers: Iterable[str]) -> set[str]:
        """The real paths the link ``name`` leads to, as ``readers``' reports read it."""
        return {real for p in readers for link, real in self.by_pipeline.get(p, ())
                if link == name}

    def chain(self, name: str) -> tuple[str, ...]:
        """:func:`chain_of` ``name``, once per update."""
        chain = self._chains.get(name)
        if chain is None:
            chain = self._chains[name] = chain_of(name)
        return chain

    # --- a pipeline's links ------------------------------------------------------------------
    def same(self, pipeline: str, links: Links) -> bool:
        return self.by_pipeline.get(pipeline, ()) == links

    def store(self, pipeline: str, links: Links) -> None:
        if links:
            self.by_pipeline[pipeline] = links

    def forget(self, pipeline: str) -> None:
        self.by_pipeline.pop(pipeline, None)
