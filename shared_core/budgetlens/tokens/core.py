"""Exact, offline token counting.

The tiktoken encodings budgetlens supports (``cl100k_base``, ``o200k_base``) ship inside the
package as ``.tiktoken`` rank files whose sha256 matches the one tiktoken publishes; nothing
is ever downloaded. A tokenizer is chosen by encoding name, by model name (``gpt-4o`` ->
``o200k_base``), or by the path of a local Hugging Face ``tokenizer.json`` (needs the optional
``tokenizers`` extra).

Anywhere budgetlens takes a tokenizer it accepts a ``TokenizerLike``: a name for
``get_tokenizer`` (``"o200k_base"``, ``"gpt-4o"``, a ``tokenizer.json`` path), a tokenizer
object (``count(text)`` or ``encode(text)``, e.g. ``get_tokenizer(...)`` or a tiktoken
``Encoding``), a ``TokenCounter``, or a function ``text -> int`` (see ``as_tokenizer``).

Counting treats special-token text such as ``<|endoftext|>`` as plain text
(``encode_ordinary``): a prompt file is text, and it costs what its text costs.

>>> get_tokenizer("cl100k_base").encode("hello world")
[15339, 1917]
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import marshal
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol, TypeAlias

from budgetlens import usercache
from budgetlens.files import content_hash, stat_fingerprint, utf8_hash
from budgetlens.tokens.counts import (
    CountStore,
    store_for,
    text_digest,
    user_cache_dir,
    utf8_digest,
    write_atomic,
)
from budgetlens.tokens.errors import TokenizerError as TokenizerError  # re-exported
from budgetlens.tokens.errors import TokenizerUnreadable as TokenizerUnreadable
from budgetlens.tokens.families import FAMILIES, FamilyTokenizer, family_for_model, load_family
from budgetlens.tokens.pieces import encode_ordinary, guarded

DEFAULT_TOKENIZER = "cl100k_base"
SHIPPED_ENCODINGS = ("cl100k_base", "o200k_base")
_DATA = Path(__file__).resolve().parent / "encodings"
log = logging.getLogger(__name__)


class Tokenizer(Protocol):
    """What budgetlens needs from a tokenizer."""

    @property
    def name(self) -> str: ...

    def encode(self, text: str) -> list[int]: ...

    def count(self, text: str) -> int: ...


class _Given(threading.local):
    """A text and its ``text_digest``, handed by ``count_digest`` to ``count`` in one
    thread (None between calls: no text is kept)."""

    pair: tuple[str, bytes] | None = None


class TiktokenTokenizer:
    """A tiktoken encoding, built on first use: ``count`` answers from the persistent count
    cache (``tokens.counts``) when the text was counted before, so a start whose prompts were
    all counted before never builds it; ``encode`` (and a new text's count) builds it."""

    def __init__(self, name: str, encoding: object | None = None, *,
                 build: Callable[[], object] | None = None,
                 counts: CountStore | None = None) -> None:
        if encoding is None and build is None:
            raise TypeError("TiktokenTokenizer needs an encoding or a function building one")
        self.name = name
        self._built = encoding
        self._build = build
        self._counts = counts
        self._lock = threading.Lock()
        self._given = _Given()

    def __repr__(self) -> str:
        return f"TiktokenTokenizer({self.name!r})"

    @property
    def loaded(self) -> bool:
        """The encoding is built."""
        return self._built is not None

    @property
    def _encoding(self) -> object:  # tiktoken.Encoding; typed loosely so mypy needs no stubs
        built = self._built
        if built is None:
            with self._lock:
                if self._built is None:
                    assert self._build is not None
                    self._built = self._build()
                built = self._built
        return built

    def encode(self, text: str) -> list[int]:
        return encode_ordinary(self._encoding, text, self.name)

    @property
    def keeps_counts(self) -> bool:
        """Counts are kept in a count store, by ``text_digest`` (``count_digest``)."""
        return self._counts is not None

    def count(self, text: str) -> int:
        store = self._counts
        if store is None:
            return len(self.encode(text))
        given = self._given.pair
        key = given[1] if given is not None and given[0] is text else text_digest(text)
        n = store.get(key)
        if n is None:
            n = len(self.encode(text))
            store.put(key, n)
        return n

    def count_digest(self, text: str, digest: bytes) -> int:
        """``count(text)`` for a caller that has ``text_digest(text)`` already (``digest``,
        the key of the count store; ``TokenCounter``): the text is not hashed again. The
        digest reaches ``count`` through this thread's hand-off, taken for this very text
        object only (``is``), and ``count`` is what is called, as for any other text."""
        given = self._given
        given.pair = (text, digest)
        try:
            return self.count(text)
        finally:
            given.pair = None

    def prepare(self) -> None:
        """Read the kept counts now, not at the first count; build the encoding unless some
        are kept (a first start counts, so it needs the encoding at once: a warm one may
        not). The server's ``warm_up`` calls it on its analysis thread."""
        store = self._counts
        if store is not None:
            store.load()
            if len(store):
                return
        self._encoding  # noqa: B018 - builds it


@dataclass(frozen=True)
class HuggingFaceTokenizer:
    name: str
    _tokenizer: object  # tokenizers.Tokenizer
    #: the file's ``stat`` fingerprint when it was read (``files.stat_fingerprint``): counts
    #: made with one version are not counts of another (``counts_key``)
    version: str = ""
    #: the blake2b (16 bytes, hex) of the bytes it was made from, and their number
    digest: str = ""
    size: int = 0

    def encode(self, text: str) -> list[int]:
        def ids(text: str) -> list[int]:
            enc = self._tokenizer.encode(text, add_special_tokens=False)  # type: ignore[attr-defined]
            return list(enc.ids)
        return guarded(self.name, ids, text)

    def count(self, text: str) -> int:
        return len(self.encode(text))


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    """The ranks of a ``.tiktoken`` text (one ``base64-token rank`` a line)."""
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split(b" ")
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


#: The per-user folder of parsed rank tables (``$XDG_CACHE_HOME/budgetlens``, else
#: ``~/.cache/budgetlens``): marshal files that load in a fraction of the text parse. Set
#: ``BUDGETLENS_RANK_CACHE=0`` to neither read nor write it.
RANK_CACHE_ENV = "BUDGETLENS_RANK_CACHE"
_RANK_MAGIC = b"budgetlens-ranks 2\n"
_RANK_PURPOSE = b"ranks"
#: The largest rank cache file read (o200k_base's takes about 4 MB).
_RANK_CACHE_CAP = 64 * 1024 * 1024


def rank_cache_dir() -> Path | None:
    """Where parsed rank tables are kept, or None when that is turned off or unknown."""
    if os.environ.get(RANK_CACHE_ENV, "") == "0":
        return None
    return user_cache_dir()


def _rank_cache_file(name: str, digest: str) -> Path | None:
    folder = rank_cache_dir()
    if folder is None:
        return None
    version = f"py{sys.version_info[0]}{sys.version_info[1]}-m{marshal.version}"
    return folder / f"{name}-{digest[:32]}-{version}-sealed.marshal"  # -sealed: _RANK_MAGIC 2


def _cached_ranks(file: Path, count: int) -> dict[bytes, int] | None:
    """The ranks kept in ``file`` if it is sealed with this user's cache key
    (``usercache``: not planted, damaged or another user's) and holds ``count`` of them;
    None for anything else (missing, a link, a FIFO, too large, another format): parse the
    text."""
    data = usercache.read_file(str(file), _RANK_CACHE_CAP)
    if data is None:
        return None
    key = usercache.user_key()
    payload = None if key is None else usercache.unseal(data, key, _RANK_PURPOSE,
                                                        _RANK_MAGIC, str(file))
    if payload is None:
        return None
    try:
        ranks = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(ranks, dict) or len(ranks) != count or not _bytes_to_ints(ranks):
        return None  # sealed by this user, yet not a table of ranks
    return ranks


def _bytes_to_ints(table: dict[Any, Any]) -> bool:
    """Whether every key of a marshalled ``table`` is bytes and every value an int, checked
    in C: of what marshal makes, only bytes joins as bytes, and a sum of ints stays an int
    (a float, a complex or a string does not). A bool passes, and means what the int does.
    Twice as fast as comparing the sets of types (o200k_base: 5.3 ms, not 7.9)."""
    try:
        b"".join(table)
        return type(sum(table.values())) is int
    except TypeError:
        return False


def _store_ranks(file: Path, ranks: dict[bytes, int]) -> None:
    """Keep ``ranks`` in ``file``, sealed with this user's cache key (a temporary file
    renamed over it: a reader never sees half a file); any failure (read-only home, full
    disk, no usable key) only means the next start parses."""
    key = usercache.user_key()
    if key is not None:
        write_atomic(file, usercache.sealed(key, _RANK_PURPOSE, _RANK_MAGIC,
                                            marshal.dumps(ranks)))


def _read_ranks(path: Path, expected_sha256: str) -> dict[bytes, int]:
    """The ranks of a shipped encoding, its text verified against its published sha256; from
    the per-user rank cache when it holds them (keyed by that hash), else parsed (and kept
    there for the next start)."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected_sha256:
        raise TokenizerError(
            f"{path.name} is damaged (sha256 {digest[:12]}..., expected {expected_sha256[:12]}...);"
            " reinstall budgetlens or run scripts/vendor_encodings.py")
    file = _rank_cache_file(path.stem, digest)
    count = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    ranks = _cached_ranks(file, count) if file is not None else None
    if ranks is None:
        ranks = _parse_ranks(data)
        if file is not None and len(ranks) == count:
            _store_ranks(file, ranks)
    return ranks


_LOAD_LOCK = threading.Lock()
#: Encodings built in this process (a debug hook: the server logs it with its first
#: diagnostics, tests read it).
encodings_built = 0


def _build_encoding(name: str, meta: dict[str, Any]) -> object:
    # Lazy import for start-up speed: tiktoken (and its regex engine) loads with the first
    # encoding, not with budgetlens (an editor's first diagnostics, `budgetlens --help`).
    global encodings_built
    import tiktoken

    with _LOAD_LOCK:
        ranks = _read_ranks(_DATA / meta["file"], meta["sha256"])
        encoding = tiktoken.Encoding(name=name, pat_str=meta["pat_str"], mergeable_ranks=ranks,
                                     special_tokens=meta["special_tokens"])
        encodings_built += 1
    log.info("tokenizer %s: encoding built (%d ranks)", name, len(ranks))
    return encoding


def _identity(name: str, meta: dict[str, Any]) -> str:
    """What decides a count of a shipped encoding, as a hex digest: its name, rank file
    (by sha256), split pattern and special tokens, and the tiktoken version."""
    import tiktoken  # cheap (~2 ms): the package, not its regex engine or a vocabulary

    ident = json.dumps({"encoding": name, "meta": meta,
                        "tiktoken": getattr(tiktoken, "__version__", "?")}, sort_keys=True)
    return hashlib.sha256(ident.encode("utf-8")).hexdigest()


@cache
def _encodings_meta() -> dict[str, Any]:
    return json.loads((_DATA / "encodings.json").read_text("utf-8"))["encodings"]  # type: ignore[no-any-return]


@cache
def _load_encoding(name: str) -> TiktokenTokenizer:
    # Loaded encodings are immutable; this per-process memo is what tiktoken does too. The
    # encoding itself is built on first use (see TiktokenTokenizer).
    meta = _encodings_meta()[name]
    return TiktokenTokenizer(name, build=lambda: _build_encoding(name, meta),
                             counts=store_for(name, _identity(name, meta)))


def _encoding_for_model(model: str) -> str | None:
    try:  # lazy import for start-up speed, as in _load_encoding
        from tiktoken.model import encoding_name_for_model
    except ImportError:  # pragma: no cover - tiktoken always has it
        return None
    try:
        return encoding_name_for_model(model)
    except KeyError:
        return None


#: The tokenizer.json files read, by path: the version read and its tokenizer. A file
#: changed since (its ``stat`` facts differ) is read again and replaces its entry, so an
#: editor session sees an edited or replaced file and never keeps more than one version of
#: it; at most :data:`MAX_HF_LOADED` files are kept (the least recently used goes first).
_HF_LOADED: dict[str, tuple[str, HuggingFaceTokenizer]] = {}
_HF_LOCK = threading.Lock()
MAX_HF_LOADED = 16


def _file_version(path: str) -> str | None:
    """The ``stat`` fingerprint of a regular file (``files.stat_fingerprint``: one version of
    it from another); None when there is no such file."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return stat_fingerprint(st) if stat.S_ISREG(st.st_mode) else None


def _load_hf(path: str, version: str) -> HuggingFaceTokenizer:
    """The tokenizer of ``path`` as it is at ``version``: the one read before when the file
    has not changed since, else read now."""
    with _HF_LOCK:
        kept = _HF_LOADED.pop(path, None)
        if kept is not None and kept[0] == version:
            _HF_LOADED[path] = kept  # the most recently used last
            return kept[1]
    tokenizer = _read_hf(path, version)
    with _HF_LOCK:
        _HF_LOADED.pop(path, None)
        _HF_LOADED[path] = (version, tokenizer)
        while len(_HF_LOADED) > MAX_HF_LOADED:
            del _HF_LOADED[next(iter(_HF_LOADED))]
    return tokenizer


def _read_hf(path: str, version: str) -> HuggingFaceTokenizer:
    try:  # lazy: an optional extra, imported only when a tokenizer.json is asked for
        from tokenizers import Tokenizer as HFTokenizer
    except ImportError as exc:
        raise TokenizerError(
            f"tokenizer {path!r} is a Hugging Face tokenizer.json, which needs the"
            " 'tokenizers' package: pip install tokenizers (or install budgetlens from its"
            " checkout with the extra: pip install '/path/to/budgetlens[tokenizers]')") from exc
    try:  # read here, not by the library: an I/O error is told apart from a bad file, and
        # the bytes the counts come from are known (``loaded_digest``)
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise TokenizerUnreadable(f"cannot read tokenizer file {path!r}:"
                                  f" {exc.strerror or exc}") from exc
    try:
        return HuggingFaceTokenizer(path, HFTokenizer.from_buffer(data), version,
                                    hashlib.blake2b(data, digest_size=16).hexdigest(),
                                    len(data))
    except Exception as exc:  # the library raises plain Exception subclasses
        raise TokenizerError(f"cannot load tokenizer file {path!r}: {exc}") from exc


def loaded_digest(path: str) -> tuple[str, str, int] | None:
    """``(version, digest, size)`` of the tokenizer.json ``path`` as this process last read it
    (``HuggingFaceTokenizer.version``, ``.digest`` and ``.size``), if it did: the result
    cache keys a report by the bytes its counts came from, not by a later read of the file."""
    with _HF_LOCK:
        kept = _HF_LOADED.get(path)
    if kept is None:
        return None
    return kept[1].version, kept[1].digest, kept[1].size


def _named_file(spec: str, base_dir: Path | None) -> Path | None:
    """The file ``spec`` (stripped, not a shipped encoding or family) names, or None."""
    if not spec.endswith(".json") and family_for_model(spec) is not None:
        return None
    if spec.endswith(".json") or "/" in spec or "\\" in spec:
        path = Path(spec)
        return base_dir / path if not path.is_absolute() and base_dir is not None else path
    return None


def tokenizer_path(spec: str | None, *, base_dir: Path | None = None) -> Path | None:
    """The file a tokenizer spec names (a ``tokenizer.json``) as the spec writes it (below
    ``base_dir`` when relative and given); None when the spec is a name (encoding, family
    or model)."""
    spec = (spec or DEFAULT_TOKENIZER).strip()
    if spec in SHIPPED_ENCODINGS or spec in FAMILIES:
        return None
    return _named_file(spec, base_dir)


def tokenizer_file(spec: str | None, *, base_dir: Path | None = None) -> str | None:
    """The file a tokenizer spec names (a ``tokenizer.json``), absolute but with its symbolic
    links kept, as the spec gives it; None when the spec is a name (encoding, family or
    model). What a check depends on: the file may be created, edited or relinked later."""
    path = tokenizer_path(spec, base_dir=base_dir)
    return os.path.abspath(path) if path is not None else None


def resolve_tokenizer_name(spec: str | None, *, base_dir: Path | None = None) -> str:
    """The canonical name of a tokenizer spec: an encoding name, or an absolute file path."""
    spec = (spec or DEFAULT_TOKENIZER).strip()
    if spec in SHIPPED_ENCODINGS or spec in FAMILIES:
        return spec
    path = _named_file(spec, base_dir)
    if path is not None:
        return str(path.resolve())
    family = family_for_model(spec)
    if family is not None:
        return family
    encoding = _encoding_for_model(spec)
    if encoding is None:
        raise TokenizerError(
            f"unknown tokenizer {spec!r}: use {' or '.join(SHIPPED_ENCODINGS)}, a model name"
            " such as 'gpt-4o', or the path of a tokenizer.json")
    if encoding not in SHIPPED_ENCODINGS:
        raise TokenizerError(
            f"model {spec!r} uses encoding {encoding!r}, which budgetlens does not ship;"
            f" use {' or '.join(SHIPPED_ENCODINGS)} or a tokenizer.json path")
    return encoding


@cache
def _family_tokenizer(name: str) -> Tokenizer:
    approximates = FAMILIES[name].approximates
    if approximates is None:
        return load_family(name)
    # An approximate family counts with a shipped encoding and says so (exact=False: ≈).
    encoding = _load_encoding(approximates)
    return FamilyTokenizer(name, False, encoding.encode, encoding.count)


TokenizerLike: TypeAlias = "str | Tokenizer | TokenCounter | Callable[[str], int]"
"""A tokenizer name, a tokenizer object, a ``TokenCounter`` or a counting function."""


@dataclass(frozen=True)
class FunctionTokenizer:
    """A tokenizer made from a counting function (``text -> int``) or an object's ``encode``."""

    name: str
    _count: Callable[[str], object]
    _encode: Callable[[str], Iterable[int]] | None = None

    def encode(self, text: str) -> list[int]:
        if self._encode is None:
            raise TypeError(f"tokenizer {self.name!r} is a counting function: it has no encode")
        return list(self._encode(text))

    def count(self, text: str) -> int:
        n = self._count(text)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TypeError(f"tokenizer {self.name!r} counted {n!r} tokens for a text;"
                            " a token count is an int >= 0")
        return n


def _name_of(obj: object) -> str:
    name = getattr(obj, "name", None)
    if isinstance(name, str) and name:
        return name
    name = getattr(obj, "__name__", None)
    return name if isinstance(name, str) and name else type(obj).__name__


def as_tokenizer(tokenizer: TokenizerLike | None, *,
                 base_dir: Path | None = None) -> Tokenizer:
    """The ``Tokenizer`` for any ``TokenizerLike`` (None: ``cl100k_base``).

    - a name goes to ``get_tokenizer`` (``base_dir`` resolves a relative tokenizer.json);
    - a ``TokenCounter`` gives its tokenizer;
    - an object with ``name``, ``count`` and ``encode`` is used as it is; one with only
      ``count`` counts with it; one with ``encode_ordinary`` (a tiktoken ``Encoding``) or
      ``encode`` counts the tokens it returns;
    - a function ``text -> int`` counts.

    Anything else raises ``TypeError`` saying what is accepted; an unusable name raises
    ``TokenizerError``.
    """
    if tokenizer is None or isinstance(tokenizer, str):
        return get_tokenizer(tokenizer, base_dir=base_dir)
    if isinstance(tokenizer, TokenCounter):
        return tokenizer.tokenizer
    if isinstance(tokenizer, (TiktokenTokenizer, HuggingFaceTokenizer, FunctionTokenizer,
                              FamilyTokenizer)):
        return tokenizer
    count = getattr(tokenizer, "count", None)
    encode = getattr(tokenizer, "encode", None)
    name = _name_of(tokenizer)
    if callable(count):
        if callable(encode) and isinstance(getattr(tokenizer, "name", None), str):
            return tokenizer  # type: ignore[return-value]  # has what Tokenizer needs
        return FunctionTokenizer(name, count, encode if callable(encode) else None)
    ordinary = getattr(tokenizer, "encode_ordinary", None)
    encoder = ordinary if callable(ordinary) else encode
    if callable(encoder):
        return FunctionTokenizer(name, lambda text: len(encoder(text)), encoder)
    if callable(tokenizer):
        return FunctionTokenizer(name, tokenizer)
    raise TypeError(
        f"expected a tokenizer: a name such as {DEFAULT_TOKENIZER!r}, a tokenizer object"
        " (count(text) or encode(text)), a TokenCounter or a function text -> int;"
        f" got {type(tokenizer).__name__}")


def as_counter(tokenizer: TokenizerLike | None) -> TokenCounter:
    """A ``TokenCounter`` for any ``TokenizerLike`` (a ``TokenCounter`` is returned as it is,
    keeping its cache)."""
    if isinstance(tokenizer, TokenCounter):
        return tokenizer
    return TokenCounter(as_tokenizer(tokenizer))


def get_tokenizer(spec: TokenizerLike | None = None, *,
                  base_dir: Path | None = None) -> Tokenizer:
    """The tokenizer for ``spec`` (default ``cl100k_base``); raises ``TokenizerError``.

    ``spec`` is normally a name (encoding, model or tokenizer.json path); a tokenizer object,
    ``TokenCounter`` or counting function is returned as a ``Tokenizer`` (``as_tokenizer``).
    ``base_dir`` resolves a relative ``tokenizer.json`` path (the folder of config.json).
    """
    if spec is not None and not isinstance(spec, str):
        return as_tokenizer(spec)
    name = resolve_tokenizer_name(spec, base_dir=base_dir)
    if name in SHIPPED_ENCODINGS:
        return _load_encoding(name)
    if name in FAMILIES:
        return _family_tokenizer(name)
    version = _file_version(name)
    if version is None:
        raise TokenizerError(f"tokenizer file not found: {name}")
    return _load_hf(name, version)


def counts_key(tokenizer: Tokenizer) -> str:
    """What counts made with ``tokenizer`` are kept under: its name, and for a tokenizer.json
    the version of the file read (an edited file is another key, so no count made with the
    old one is taken for the new, in this process or from another)."""
    version = getattr(tokenizer, "version", None)
    return f"{tokenizer.name}\0{version}" if version else tokenizer.name


class TokenCounter:
    """Counts tokens with one tokenizer, caching each count by a hash of the text (its key).

    The key is the text's content hash (``files.content_hash``), except for a tokenizer that
    keeps counts of its own by ``text_digest`` (a shipped encoding's persistent count store):
    then it is that digest (in hex), handed down with the text (``count_digest``), so a text
    is hashed once, not once here and once more there.

    The caller owns the object (an editor session keeps one per tokenizer, a CLI run one per
    run): an unchanged text is never encoded twice. Safe to share between threads.
    """

    def __init__(self, tokenizer: TokenizerLike, *, max_entries: int = 65536) -> None:
        self.tokenizer = as_tokenizer(tokenizer)
        #: the tokenizer, when it keeps counts by ``text_digest``: the key here is that digest
        self._digests = (self.tokenizer if isinstance(self.tokenizer, TiktokenTokenizer)
                         and self.tokenizer.keeps_counts else None)
        self._cache: dict[str, int] = {}
        self._max = max_entries
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        #: the counts this counter made itself since ``take_fresh`` (None: not kept); a
        #: caller checking in several processes hands them to the others (``learn``)
        self._fresh: list[tuple[str, int]] | None = None

    def keep_fresh(self) -> None:
        """From now on keep the counts made here for ``take_fresh``."""
        with self._lock:
            if self._fresh is None:
                self._fresh = []

    def take_fresh(self) -> list[tuple[str, int]]:
        """The ``(key, count)`` of every text counted here (not learned) since the last call;
        empty unless ``keep_fresh`` was called. The key is the text's (see the class): a
        counter of the same tokenizer, in any process, keys a text alike."""
        with self._lock:
            fresh, self._fresh = self._fresh, ([] if self._fresh is not None else None)
        return fresh or []

    def learn(self, counts: Iterable[tuple[str, int]]) -> None:
        """Counts another counter of the same tokenizer made (``take_fresh``), by the text's
        key: a text among them is not encoded here."""
        with self._lock:
            for key, n in counts:
                if len(self._cache) >= self._max:
                    self._cache.clear()
                self._cache[key] = n

    @property
    def name(self) -> str:
        return self.tokenizer.name

    @property
    def key(self) -> str:
        """What a cache of counts made by this counter is keyed by: ``counts_key``."""
        return counts_key(self.tokenizer)

    def count(self, text: str, *, utf8: bytes | None = None) -> int:
        """The tokens of ``text``. ``utf8``: its UTF-8 bytes (``text.encode("utf-8",
        "surrogatepass")``) when the caller has them, a file's (``files.read_text_utf8``):
        the key is hashed from them, the text not encoded to hash it."""
        if not text:
            return 0
        keeper = self._digests
        if keeper is None:
            key = content_hash(text) if utf8 is None else utf8_hash(utf8)
        else:
            digest = text_digest(text) if utf8 is None else utf8_digest(utf8)
            key = digest.hex()
        cached = self._cache.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        n = self.tokenizer.count(text) if keeper is None else keeper.count_digest(text, digest)
        with self._lock:
            if len(self._cache) >= self._max:
                self._cache.clear()
            self._cache[key] = n
            self.misses += 1
            if self._fresh is not None:
                self._fresh.append((key, n))
        return n
