"""A git revision as a ``FileSource``, read without a worktree.

``git ls-tree -r REV`` lists the revision's files once; a file's text is read only when the
check asks for it, from one ``git cat-file --batch`` process fed the object id of each file
needed, one at a time (nothing else of the revision is read). Paths are a folder that does
not exist (the *mount*, next to the repository's files) joined with the path in the tree, so
a revision reads like a checkout, but nothing is read from the disk: a path not in the tree
is missing. Symbolic links of the tree are followed in the tree (``realpath``, which the
check asks when it decides whether a file is inside the workspace), submodules are never
read. Works on a shallow clone as long as the revision itself was fetched
(``fetch-depth: 2``, ``git fetch origin BASE``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import IO, NamedTuple

from budgetlens.files import (
    MAX_FILE_BYTES,
    MISSING_FINGERPRINT,
    FileMissing,
    FileTooLarge,
    NotAFile,
    OutsideRoot,
    SourceError,
    Unreadable,
    decode_text,
    path_problem,
)
from budgetlens_cli.main import UsageError

_SYMLINK = "120000"
_MAX_LINKS = 40  # as Linux: more links on one path is a loop
_MAX_LINK_BYTES = 4096  # a link's target is a path: PATH_MAX
#: The bytes of all the files read from one revision, together (each file is also under
#: ``MAX_FILE_BYTES``): the pipelines, config.json files and prompts a check needs.
MAX_TOTAL_BYTES = 128 * 1024 * 1024


def _env() -> dict[str, str]:
    return dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat")


def git(args: list[str], cwd: str, stdin: bytes | None = None
        ) -> subprocess.CompletedProcess[bytes]:
    """Run ``git`` in ``cwd`` (no pager, no prompt); the result, whatever its status."""
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=_env(),
                              input=stdin, check=False)
    except FileNotFoundError:
        raise UsageError("git is not installed (needed to read a revision)") from None


def _first_line(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[0] if lines else ""


def revision_commit(rev: str, cwd: str) -> str | None:
    """The commit id ``rev`` names in the repository holding ``cwd``; None when it names
    none (or there is no repository, or no git)."""
    if rev.startswith("-"):
        return None
    try:
        done = git(["rev-parse", "--verify", "--quiet", "--end-of-options",
                    f"{rev}^{{commit}}"], cwd)
    except UsageError:  # no git: then no revision either
        return None
    return done.stdout.decode().strip() if done.returncode == 0 else None


def resolve_revision(rev: str, cwd: str) -> str:
    """The commit id of ``rev``; UsageError when it names no commit of this repository."""
    if rev.startswith("-"):
        raise UsageError(f"{rev}: not a revision or a folder")
    commit = revision_commit(rev, cwd)
    if commit is None:
        inside = git(["rev-parse", "--show-toplevel"], cwd)
        if inside.returncode != 0:
            raise UsageError(f"{rev}: no such folder, and {os.path.abspath(cwd)} is not in a"
                             " git repository to read a revision from")
        raise UsageError(f"{rev}: unknown revision and no such folder (on a shallow CI"
                         " checkout fetch it first: `git fetch --depth=1 origin <sha>`)")
    return commit


class _Entry(NamedTuple):
    """A file of the tree: its mode, object type, object id and size (0 for a submodule)."""

    mode: str
    kind: str
    sha: str
    size: int


class GitRevisionFiles:
    """The files of one commit of the repository at ``repo``, keyed by their path under
    ``mount`` (default: the repository's top). A ``mount`` that does not exist on disk keeps
    the check's symlink test off the working tree (it asks ``realpath`` here).

    ``bytes_read`` counts the bytes of every object read; a read that would take it past
    ``max_total`` is refused (``FileTooLarge``, the first such path kept in ``refused``).
    ``close`` ends the ``git cat-file`` process (the object is also a context manager)."""

    def __init__(self, commit: str, repo: str, mount: str | None = None, *,
                 max_bytes: int = MAX_FILE_BYTES, max_total: int | None = None) -> None:
        self.commit = commit
        self.repo = repo
        self.top = os.path.abspath(mount if mount is not None else repo)
        self.max_bytes = max_bytes
        self.max_total = max_total if max_total is not None else MAX_TOTAL_BYTES
        self.bytes_read = 0
        self.refused: str | None = None
        self._entries: dict[str, _Entry] = {}  # by path in the tree, "/" separated
        self._dirs: set[str] = {""}
        self._texts: dict[str, str] = {}
        self._links: dict[str, str | None] = {}  # a link's object id -> its target
        self._batch: subprocess.Popen[bytes] | None = None
        self._list()

    # ------------------------------------------------------------------------- the tree
    def _list(self) -> None:
        done = git(["ls-tree", "-r", "-l", "-z", "--full-tree", self.commit], self.repo)
        if done.returncode != 0:
            raise UsageError(f"{self.commit}: cannot list the files ({_first_line(done.stderr)})")
        for record in done.stdout.split(b"\0"):
            if not record:
                continue
            meta, name = record.split(b"\t", 1)
            mode, kind, sha, size = meta.decode().split()
            rel = name.decode("utf-8", "surrogateescape")
            self._entries[rel] = _Entry(mode, kind, sha, int(size) if size.isdigit() else 0)
            self._dirs.update(str(p) for p in PurePosixPath(rel).parents if str(p) != ".")

    def _rel(self, path: str) -> str | None:
        """``path`` (absolute) as a path in the tree; None when it is outside the mount."""
        if path == self.top:
            return ""
        prefix = self.top.rstrip(os.sep) + os.sep
        return path[len(prefix):].replace(os.sep, "/") if path.startswith(prefix) else None

    def file_names(self) -> list[str]:
        """What a glob on a checkout may find: every file and symbolic link of the tree,
        and the names in a folder of the tree that a symbolic link named ``pipelines``
        leads to (``<link>/<name>``: a checkout's glob goes through that link)."""
        names = [rel for rel, e in self._entries.items() if e.kind == "blob"]
        for rel, e in self._entries.items():
            if e.mode != _SYMLINK or PurePosixPath(rel).name != "pipelines":
                continue
            real = self._rel(self.realpath(os.path.join(self.top, rel)))
            if real is None or real not in self._dirs:
                continue
            prefix = f"{real}/" if real else ""
            names.extend(f"{rel}/{child[len(prefix):]}" for child, c in self._entries.items()
                         if c.kind == "blob" and child.startswith(prefix)
                         and "/" not in child[len(prefix):])
        return sorted(names)

    def submodules(self) -> list[tuple[str, str]]:
        """Every submodule of the tree (a gitlink): its path and commit id."""
        return sorted((rel, e.sha) for rel, e in self._entries.items() if e.kind == "commit")

    def _submodule_of(self, rel: str) -> str | None:
        """The submodule ``rel`` lies in, if any."""
        for parent in PurePosixPath(rel).parents:
            entry = self._entries.get(str(parent))
            if entry is not None and entry.kind == "commit":
                return str(parent)
        return None

    def realpath(self, path: str) -> str:
        """Where ``path`` lies in the revision, as ``os.path.realpath`` says on a checkout
        at the mount: each symbolic link of the tree on the way is replaced by its target
        (read from the tree). A link out of the tree gives a path outside the mount; a loop,
        or a target that cannot be read, leaves ``path`` as written (reading it then says
        so). A path outside the mount is returned as written: the disk is never looked at."""
        absolute = os.path.abspath(path)
        rel = self._rel(absolute)
        if rel is None:
            return absolute
        todo = [p for p in reversed(rel.split("/"))]
        done: list[str] = []
        links = 0
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if not done:  # above the tree
                    return os.path.normpath(os.path.join(self.top, os.pardir, *reversed(todo)))
                done.pop()
                continue
            done.append(name)
            entry = self._entries.get("/".join(done))
            if entry is None or entry.mode != _SYMLINK:
                continue
            links += 1
            target = self._link_target(entry, "/".join(done)) if links <= _MAX_LINKS else None
            if target is None:
                return absolute
            done.pop()
            if target.startswith("/"):
                inner = self._rel(os.path.normpath(target))
                if inner is None:  # a path of the disk: outside the tree
                    return os.path.normpath(os.path.join(target, *reversed(todo)))
                done, target = [], inner
            todo.extend(reversed(target.split("/")))
        return os.path.join(self.top, *done)

    def _link_target(self, entry: _Entry, rel: str) -> str | None:
        """The target of the symbolic link ``rel`` of the tree; None when it cannot be
        read."""
        if entry.sha not in self._links:
            target = None
            if entry.size <= _MAX_LINK_BYTES:
                try:
                    data = self._read_object(entry.sha, entry.size,
                                             os.path.join(self.top, rel))
                    if data and b"\0" not in data:
                        target = data.decode("utf-8", "surrogateescape")
                except SourceError:
                    pass  # unreadable: the path is left as written
            self._links[entry.sha] = target
        return self._links[entry.sha]

    # ------------------------------------------------------------------------ the files
    def _file_entry(self, path: Path, rel: str) -> _Entry:
        """The tree entry of the file ``path`` (at ``rel``, links followed), or why it
        has none."""
        entry = self._entries.get(rel)
        if entry is None:
            if rel in self._dirs:
                raise NotAFile(path, f"{path}: is a directory, expected a file")
            module = self._submodule_of(rel)
            if module is not None:
                raise Unreadable(path, f"{path}: in the submodule {module} (commit"
                                       f" {self._entries[module].sha[:12]}), which is not read"
                                       " from a revision")
            raise FileMissing(path, f"{path}: no such file at {self.commit[:12]}")
        if entry.mode == _SYMLINK:
            raise NotAFile(path, f"{path}: too many levels of symbolic links (or a link that"
                                 " cannot be read)")
        if entry.kind == "commit":
            raise Unreadable(path, f"{path}: the submodule {rel} (commit {entry.sha[:12]}),"
                                   " which is not read from a revision")
        if entry.kind != "blob":
            raise NotAFile(path, f"{path}: a {entry.kind}, expected a file")
        if entry.size > self.max_bytes:
            raise FileTooLarge(path, f"{path}: {entry.size} bytes, above the {self.max_bytes}"
                                     " byte cap for a text input")
        return entry

    def read_text(self, path: Path) -> str:
        problem = path_problem(path)
        if problem is not None:
            raise FileMissing(path, f"{str(path)!r}: {problem}")
        rel = self._rel(self.realpath(str(path)))
        if rel is None:
            raise OutsideRoot(path, f"{path}: a symbolic link out of the repository")
        text = self._texts.get(rel)
        if text is None:
            entry = self._file_entry(path, rel)
            text = self._texts[rel] = decode_text(
                self._read_object(entry.sha, entry.size, str(path)), path)
        return text

    def fingerprint(self, path: Path) -> str:
        rel = self._rel(self.realpath(str(path)))
        entry = self._entries.get(rel) if rel is not None else None
        if entry is None or entry.kind != "blob" or entry.mode == _SYMLINK:
            return MISSING_FINGERPRINT
        return f"git:{entry.sha}"

    # ---------------------------------------------------------------------- the objects
    def _process(self) -> subprocess.Popen[bytes]:
        if self._batch is None:
            try:
                self._batch = subprocess.Popen(
                    ["git", "cat-file", "--batch"], cwd=self.repo, env=_env(),
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            except FileNotFoundError:
                raise UsageError("git is not installed (needed to read a revision)") from None
        return self._batch

    def _read_object(self, sha: str, size: int, path: str) -> bytes:
        """The ``size`` bytes of the object ``sha`` (the file ``path``), read from the
        ``git cat-file --batch`` process; refused past the total cap."""
        if self.bytes_read + size > self.max_total:
            if self.refused is None:
                self.refused = path
            raise FileTooLarge(path, f"{path}: not read: the files read from"
                                     f" {self.commit[:12]} would pass {self.max_total:,} bytes")
        proc = self._process()
        stdin, stdout = proc.stdin, proc.stdout
        assert stdin is not None and stdout is not None  # both are pipes
        try:
            stdin.write(f"{sha}\n".encode())
            stdin.flush()
            header = stdout.readline(256)
            parts = header.split()
            ok = len(parts) == 3 and parts[1] == b"blob" and parts[2] == str(size).encode()
            data = _read_exactly(stdout, size) if ok else b""
        except OSError as exc:
            self.close()
            raise Unreadable(path, f"{path}: cannot read object {sha[:12]} ({exc})") from None
        if not ok or data is None:
            self.close()  # the answer is not the one asked for: a new process next time
            answer = header.decode("utf-8", "replace").strip() or "no answer from git"
            raise FileMissing(path, f"{path}: object {sha[:12]} cannot be read ({answer})")
        self.bytes_read += size
        return data

    def close(self) -> None:
        """End the ``git cat-file`` process, if one was started."""
        proc, self._batch = self._batch, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        proc.wait()

    def __enter__(self) -> GitRevisionFiles:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    """``size`` bytes of ``stream`` and the newline after them; None when it ends first."""
    data = stream.read(size) if size else b""
    if len(data) != size or stream.read(1) != b"\n":
        return None
    return data


def repository_top(cwd: str) -> str:
    """The top-level folder of the repository holding ``cwd``."""
    done = git(["rev-parse", "--show-toplevel"], cwd)
    if done.returncode != 0:
        raise UsageError(f"{os.path.abspath(cwd)} is not in a git repository")
    return done.stdout.decode().strip()
