"""Finding the files of a workspace: its pipelines, and the config.json a pipeline uses."""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from budgetlens.contract.cache import BudgetCache, RecordingFiles
from budgetlens.files import MISSING_FINGERPRINT, RunFiles, SourceError

if TYPE_CHECKING:
    from budgetlens.contract.config import LoadedConfig
    from budgetlens.contract.results import CheckOptions
    from budgetlens.formats.mapping import MappingSpec

PIPELINE_GLOBS = ("*.yaml", "*.yml")
#: Prompt files in their own formats, found in any folder (docs/prompt-formats.md); a
#: ``.prompt`` without Dotprompt front matter is found but has no step, and a Dotprompt
#: partial (``_name.prompt``) is read by the files that include it, not checked alone.
PROMPT_SUFFIXES = (".prompt.yml", ".prompt.yaml", ".prompty", ".prompt")


def is_prompt_path(path: str) -> bool:
    """A file a format reader may read, by its name (``.prompt`` needs Dotprompt front
    matter too: ``read_prompt_file`` decides)."""
    return path.endswith(PROMPT_SUFFIXES)
#: Folders the search for pipelines never enters, besides hidden ones (dependencies).
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages"})


#: ``excluded(path, is_dir)``: whether the search skips a folder or pipeline file (the CLI's
#: ``--exclude`` and .gitignore); None: hidden and dependency folders (``SKIP_DIRS``).
Excluded = Callable[[str, bool], bool]


def ignore_folders(folder: str) -> list[str]:
    """The folders whose ``.gitignore`` apply to a file of ``folder``: from the repository's
    root (the nearest folder at or above it holding ``.git``) down to ``folder``; none
    outside a repository (git reads no .gitignore there either)."""
    chain = [folder]
    current = folder
    for _ in range(256):
        if os.path.exists(os.path.join(current, ".git")):
            return chain[::-1]
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
        chain.append(current)
    return []


def read_gitignore(path: str) -> Any:
    """The patterns of one ``.gitignore`` (or ``.git/info/exclude``: a
    ``pathspec.GitIgnoreSpec``), None when there is no such file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read(1024 * 1024).splitlines()
    except OSError:
        return None
    import pathspec  # lazy: start-up speed (only a folder with a .gitignore needs it)

    return pathspec.GitIgnoreSpec.from_lines(lines)


#: The files of a repository's root folder that ignore paths as a ``.gitignore`` there does,
#: read before it (so the ``.gitignore`` wins): ``.git/info/exclude``.
ROOT_IGNORE_FILES = (os.path.join(".git", "info", "exclude"),)


def ignore_files(folder: str, root: str) -> tuple[str, ...]:
    """The ignore files of ``folder``, a folder of the chain of ``ignore_folders`` whose
    first (the repository's root) is ``root``, in the order git applies them."""
    own = os.path.join(folder, ".gitignore")
    if folder != root:
        return (own,)
    return (*(os.path.join(folder, name) for name in ROOT_IGNORE_FILES), own)


class GitIgnored:
    """``excluded(path, is_dir)`` for what git ignores: the ``.gitignore`` files of the
    folder and its parents up to the repository's root (the folder holding ``.git``), and
    ``.git/info/exclude``. git is not run: the files are read with ``pathspec`` (the global
    excludes file is not read). Each file is read once per instance, and each folder's
    rules are found once."""

    def __init__(self) -> None:
        self._specs: dict[str, Any] = {}
        #: per folder: the (folder, spec) pairs that apply to its entries, in git's order
        self._rules: dict[str, list[tuple[str, Any]]] = {}

    def __call__(self, path: str, is_dir: bool) -> bool:
        path = os.path.abspath(path)
        return _ignores(self._rules_of(os.path.dirname(path)), path, is_dir)

    def keep_files(self, folder: str, paths: list[Path]) -> list[Path]:
        """The files of ``paths`` (each directly in ``folder``) git does not ignore. A
        folder no ignore file applies to costs one look-up, not one per file."""
        rules = self._rules_of(os.path.abspath(folder))
        if not rules:
            return paths
        return [p for p in paths if not _ignores(rules, os.path.abspath(p), False)]

    def _rules_of(self, parent: str) -> list[tuple[str, Any]]:
        rules = self._rules.get(parent)
        if rules is None:  # each folder's once (5,000 pipelines of one folder: one walk up)
            chain = ignore_folders(parent)
            rules = self._rules[parent] = [
                (folder, spec) for folder in chain for name in ignore_files(folder, chain[0])
                if (spec := self._spec(name)) is not None]
        return rules

    def _spec(self, name: str) -> Any:
        spec = self._specs.get(name, False)
        if spec is False:
            spec = self._specs[name] = read_gitignore(name)
        return spec


def _ignores(rules: list[tuple[str, Any]], path: str, is_dir: bool) -> bool:
    """git's verdict on the absolute ``path``: the last rule that matches it decides."""
    verdict: bool | None = None
    for folder, spec in rules:
        rel = os.path.relpath(path, folder).replace(os.sep, "/") + ("/" if is_dir else "")
        include = spec.check_file(rel).include
        if include is not None:
            verdict = include
    return bool(verdict)


class FolderExcluded:
    """An ``Excluded`` that also judges a folder's files at once (``keep_files``): the
    search asks it once per folder, not once per file."""

    def __call__(self, path: str, is_dir: bool) -> bool:
        raise NotImplementedError

    def keep_files(self, folder: str, paths: list[Path]) -> list[Path]:
        """The files of ``paths`` (each directly in ``folder``) it keeps."""
        return [p for p in paths if not self(str(p), False)]


class DefaultExcluded(FolderExcluded):
    """What the search skips with no option given (the editor's search, and the CLI's with
    its defaults): hidden and dependency folders (``SKIP_DIRS``) and what git ignores."""

    def __init__(self) -> None:
        self.ignored = GitIgnored()

    def __call__(self, path: str, is_dir: bool) -> bool:
        if is_dir:
            name = os.path.basename(os.path.normpath(path))
            if name.startswith(".") or name in SKIP_DIRS:
                return True
        return self.ignored(path, is_dir)

    def keep_files(self, folder: str, paths: list[Path]) -> list[Path]:
        return self.ignored.keep_files(folder, paths)


def default_excluded() -> Excluded:
    """``DefaultExcluded()``: what the search skips with no option given."""
    return DefaultExcluded()


def kept_files(excluded: Excluded, folder: str, paths: list[Path]) -> list[Path]:
    """The files of ``paths`` (each directly in ``folder``) ``excluded`` keeps."""
    if isinstance(excluded, FolderExcluded):
        return excluded.keep_files(folder, paths)
    return [p for p in paths if not excluded(str(p), False)]


def for_root(root: Path | str, excluded: Excluded | None) -> Excluded | None:
    """``excluded`` for a search of the folder ``root``; None (the defaults: hidden and
    dependency folders) when ``root`` is itself excluded. A folder opened or named on
    purpose is searched whatever ignores it, as a file named on purpose is checked: a
    workspace inside a folder that its repository's .gitignore leaves out (a checkout's
    ``bench/.work/``) would else look empty."""
    if excluded is not None and excluded(os.path.abspath(root), True):
        return None
    return excluded


def search_walk(root: Path | str, excluded: Excluded | None = None,
                ) -> Iterator[tuple[str, list[str]]]:
    """The folders the search for pipelines walks below the folder ``root``, each with the
    names of the folders it goes on into (hidden and dependency folders left out, or those
    ``excluded`` names, sorted; a folder reached through a symbolic link is named but not
    entered, as ``os.walk`` does): ``find_pipelines``, and what must hold still for its
    result to (the CLI's recorded answers fingerprint these folders). ``excluded`` is
    taken through ``for_root``."""
    for dirpath, dirnames, _ in _walk(root, excluded):
        yield dirpath, dirnames


def _walk(root: Path | str, excluded: Excluded | None,
          ) -> Iterator[tuple[str, list[str], list[str]]]:
    """``search_walk`` with each folder's other entries (``os.walk``'s file names)."""
    excluded = for_root(root, excluded)
    for dirpath, dirnames, filenames in os.walk(root):
        if excluded is None:
            kept = (d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
        else:
            kept = (d for d in dirnames if not excluded(os.path.join(dirpath, d), True))
        dirnames[:] = sorted(kept)
        yield dirpath, dirnames, filenames


def find_pipelines(root: Path | str, excluded: Excluded | None = None) -> list[Path]:
    """Pipeline files under ``root``: ``root`` itself if a file, else every ``pipelines/*.yaml``
    (and ``*.yml``) and every prompt file (``prompt_files``) below it, hidden folders and
    dependency folders skipped (or what ``excluded`` names); sorted. A ``pipelines`` folder
    itself (also as ``.`` from inside it) gives its own files."""
    root = Path(root)
    if not root.is_dir():
        return [root]
    kept = for_root(root, excluded)
    found: list[Path] = []

    def add(folder: str, paths: list[Path]) -> None:
        found.extend(paths if kept is None else kept_files(kept, folder, paths))

    if os.path.basename(os.path.abspath(root)) == "pipelines":
        add(str(root), [p for pattern in PIPELINE_GLOBS for p in root.glob(pattern)])
    for dirpath, dirnames, filenames in _walk(root, excluded):
        add(dirpath, prompt_files(dirpath, filenames))
        mapped = mapped_files(dirpath)  # below the folder too: judged one by one
        found.extend(mapped if kept is None else [p for p in mapped if not kept(str(p), False)])
        if "pipelines" in dirnames:
            folder = Path(dirpath) / "pipelines"
            add(str(folder), [p for pattern in PIPELINE_GLOBS for p in folder.glob(pattern)])
    return sorted_paths(set(found))


def prompt_files(folder: str, names: list[str] | None = None) -> list[Path]:
    """The prompt files of ``folder`` itself (``PROMPT_SUFFIXES``, partials left out).
    ``names``: its entries other than folders, when the caller listed it already (a walk
    of 1,000 pipelines need not list their folder twice)."""
    if names is None:
        try:
            names = os.listdir(folder)
        except OSError:
            return []
    return [Path(folder) / n for n in names
            if n.endswith(PROMPT_SUFFIXES) and not (n.startswith("_") and n.endswith(".prompt"))
            and os.path.isfile(os.path.join(folder, n))]


def mapping_globs(config: object) -> list[str]:
    """The globs of the ``prompt_mappings`` of config.json's data (entries without a
    string glob and output left out, as ``mapping_in`` leaves them)."""
    mappings = config.get("prompt_mappings") if isinstance(config, dict) else None
    if not isinstance(mappings, list):
        return []
    return [m["glob"] for m in mappings if isinstance(m, dict)
            and all(isinstance(m.get(k), str) and m[k] for k in ("glob", "output"))]


def mapped_files(folder: str) -> list[Path]:
    """The files the ``prompt_mappings`` globs of ``folder``'s own config.json match
    (relative to that folder; none without a readable config.json). A path through a
    hidden or dependency folder is left out, as the search for pipelines leaves it."""
    config = os.path.join(folder, "config.json")
    if not os.path.isfile(config):
        return []
    try:
        with open(config, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return []  # the check of the files under it reports the config.json
    out: list[Path] = []
    base = Path(folder)
    for pattern in mapping_globs(data):
        if os.path.isabs(pattern) or ".." in Path(pattern).parts:
            continue  # only inside the config's folder
        try:
            matches = list(base.glob(pattern))
        except (ValueError, OSError):
            continue
        out.extend(p for p in matches if p.is_file() and not any(
            part.startswith(".") or part in SKIP_DIRS
            for part in p.relative_to(base).parts[:-1]))
    return out


def mapping_in(pipe: str, config: LoadedConfig | None) -> MappingSpec | None:
    """The first ``prompt_mappings`` entry of ``config`` whose glob matches ``pipe``."""
    if config is None or config.config is None or not config.config.prompt_mappings:
        return None
    from budgetlens.formats.mapping import MappingSpec  # lazy: start-up (templates)

    relative = Path(os.path.relpath(os.path.abspath(pipe),
                                    os.path.abspath(config.directory))).as_posix()
    for entry in config.config.prompt_mappings:
        if not entry.glob or not entry.output:  # reported at config.json (BL013)
            continue
        spec = MappingSpec(entry.glob, model=entry.model or "", output=entry.output,
                           system_text=entry.system_text, system_file=entry.system_file,
                           template=entry.template)
        if _glob_matches(spec, relative):
            return spec
    return None


def _glob_matches(spec: MappingSpec, relative: str) -> bool:
    """``spec.matches``, with a leading ``**/`` also matching no folder, as ``Path.glob``
    finds the files (``mapped_files``)."""
    if spec.matches(relative):
        return True
    glob = spec.glob
    while glob.startswith("**/"):
        glob = glob[3:]
        if fnmatch.fnmatch(relative, glob):
            return True
    return False


def sorted_paths(paths: Iterable[Path]) -> list[Path]:
    """``sorted(paths)``: a POSIX path orders by its parts, compared here as a key made once
    per path (``Path.__lt__`` makes its parts list again at each of the n log n comparisons:
    a tenth of a second for 5,000 pipelines). Only paths all relative or all absolute (as
    one search gives them) are sorted so: Python versions spell an absolute path's first
    part differently; a mix, and other flavours (case-folded), sort as they are."""
    items = list(paths)
    if os.name != "posix" or len({p.is_absolute() for p in items}) > 1:
        return sorted(items)
    return sorted(items, key=_parts)


def _parts(path: Path) -> tuple[str, ...]:
    return path.parts


def project_root(pipeline: str, workspace_root: str | None,
                 exists: Callable[[str], bool] = os.path.isfile) -> str | None:
    """The root a pipeline is checked under, whatever folder a client chose as the workspace:
    ``workspace_root``, unless no config.json lies at or above the pipeline inside it and one
    lies above it; then that config.json's folder, the root ``budgetlens check`` uses for the
    pipeline (it finds the nearest config.json at or above the pipeline, with no limit).

    So an editor that roots the workspace at the pipeline's own folder (eglot without a
    version-control root) sees the same config.json, prompts and numbers as the CLI.
    ``None`` when ``workspace_root`` is None (the search then has no limit anyway).
    """
    from budgetlens.contract.config import CONFIG_NAME  # lazy: start-up, as below

    if workspace_root is None:
        return None
    root = os.path.abspath(workspace_root)
    current = os.path.abspath(os.path.dirname(pipeline) or ".")
    for _ in range(256):
        if exists(os.path.join(current, CONFIG_NAME)):
            inside = current == root or current.startswith(root.rstrip(os.sep) + os.sep)
            return workspace_root if inside else current
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return workspace_root


def _explicit_config(path: str, files: RecordingFiles, cache: BudgetCache) -> LoadedConfig:
    """The config.json given by the user (``--config``): an unreadable one is a diagnostic."""
    from budgetlens.contract.config import load_config, unreadable_config  # lazy: start-up

    def load() -> LoadedConfig:
        try:
            return load_config(path, files.read_text(Path(path)))
        except SourceError as exc:
            return unreadable_config(path, exc)
    return cache.parsed("config", path, files, load)


def pipeline_config(pipeline: str, files: RecordingFiles, options: CheckOptions,
                    cache: BudgetCache) -> tuple[LoadedConfig | None, str | None]:
    """The config.json of ``pipeline`` and its path: ``options.config_path``, else the
    nearest at or above the pipeline's folder (not above the workspace root). Every path
    probed is recorded in ``files`` (a config.json created there later counts).

    Over a ``RunFiles`` (one unchanging state of the files) each folder is searched once per
    run: the next pipeline of the folder takes the places probed and the one found from
    ``RunFiles.remembered``, and records the same fingerprints."""
    # lazy for start-up speed: find_pipelines (`budgetlens check`) needs no config model
    from budgetlens.contract.config import find_config, read_config_if_present

    if options.config_path is not None:
        path = os.path.normpath(str(options.config_path))
        return _explicit_config(path, files, cache), path
    root = options.workspace_root
    stop = str(root) if root is not None else None
    start = os.path.dirname(pipeline) or "."

    def load_candidate(path: str) -> LoadedConfig | None:
        if files.fingerprint(path) == MISSING_FINGERPRINT:
            return None
        return cache.parsed("config", path, files,
                            lambda: read_config_if_present(path, files))

    def search() -> _Search:
        loaded, probed = find_config(start, files, load=load_candidate, stop_at=stop)
        return _Search(tuple(probed), loaded is not None)

    run = files.base if isinstance(files.base, RunFiles) else None
    found = run.remembered(("config.json search", start, stop), search) if run else search()
    for p in found.probed:  # the fingerprints of this pipeline's record (memoised: no stat)
        files.fingerprint(p)
    loaded = load_candidate(found.probed[-1]) if found.found else None
    if found.found and loaded is None:  # pragma: no cover - gone while read: search again
        loaded, probed = find_config(start, files, load=load_candidate, stop_at=stop)
        for p in probed:
            files.fingerprint(p)
    return loaded, loaded.path if loaded else None


@dataclass(frozen=True)
class _Search:
    """Where the search for a folder's config.json looked (in order), and whether the last
    place holds it."""

    probed: tuple[str, ...]
    found: bool
