"""Every exact tokenizer family agrees with its reference implementation on the corpus."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from budgetlens.tokens.core import TokenizerError, get_tokenizer, resolve_tokenizer_name
from budgetlens.tokens.families import FAMILIES, family_for_model, is_exact
from tests.core.tokens.corpus import corpus
from tests.core.tokens.references import reference

EXACT = ["cl100k_base", "o200k_base", "llama3", "qwen2", "deepseek", "mistral_tekken"]


@pytest.mark.parametrize("family", EXACT)
def test_ids_match_the_reference_on_every_corpus_string(family: str) -> None:
    ours, ref = get_tokenizer(family), reference(family)
    texts = corpus()
    assert len(texts) >= 200
    mismatches = [t for t in texts if ours.encode(t) != ref(t)]
    assert mismatches == [], f"{len(mismatches)} mismatches, first: {mismatches[0]!r}"
    assert all(ours.count(t) == len(ref(t)) for t in texts)
    assert is_exact(ours)


# Token ids written down by hand (Llama 3 keeps cl100k's first 100,000 ranks, so its ids for
# this text are cl100k's published [15339, 1917]; the others as printed by each family's
# reference: Qwen's tokenizer, the HF library on DeepSeek's file, mistral-common's Tekkenizer,
# whose ids are ranks + 1,000 special tokens), so a broken reference would not pass unnoticed.
@pytest.mark.parametrize(("family", "text", "ids"), [
    ("llama3", "hello world", [15339, 1917]),
    ("qwen2", "hello world", [14990, 1879]),
    ("deepseek", "hello world", [33310, 2058]),
    ("mistral_tekken", "hello world", [29706, 4304]),
])
def test_hello_world_has_known_ids(family: str, text: str, ids: list[int]) -> None:
    assert get_tokenizer(family).encode(text) == ids


@pytest.mark.parametrize(("model", "family"), [
    ("llama-3.1-8b-instruct", "llama3"),
    ("meta-llama/Llama-3.3-70B-Instruct", "llama3"),
    ("Qwen/Qwen2.5-72B-Instruct", "qwen2"),
    ("qwen3-235b-a22b", "qwen2"),
    ("deepseek-chat", "deepseek"),
    ("deepseek-ai/DeepSeek-R1", "deepseek"),
    ("mistral-nemo-instruct-2407", "mistral_tekken"),
    ("claude-sonnet-4-5", "claude_approx"),
    ("gemini-2.5-pro", "gemini_approx"),
])
def test_model_names_map_to_their_family(model: str, family: str) -> None:
    assert family_for_model(model) == family
    assert resolve_tokenizer_name(model) == family


@pytest.mark.parametrize("model", ["qwen3.6-27b", "mistral-large-2407", "llama-4-scout"])
def test_models_whose_vocabulary_is_not_covered_map_to_no_family(model: str) -> None:
    assert family_for_model(model) is None


@pytest.mark.parametrize("family", ["claude_approx", "gemini_approx"])
def test_approximate_families_say_they_approximate(family: str) -> None:
    tok = get_tokenizer(family)
    assert not is_exact(tok)
    assert FAMILIES[family].approximates == "o200k_base"
    # "hello world" is [24912, 2375] in o200k_base (tiktoken's published ids).
    assert tok.encode("hello world") == [24912, 2375]


def test_a_family_whose_package_is_missing_says_which_extra_to_install() -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["quicktok"] = None  # as if quicktok-v1 were not installed
        from budgetlens.tokens.core import TokenizerError, get_tokenizer
        try:
            get_tokenizer("llama3")
        except TokenizerError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'budgetlens[llama]'" in out.stdout
    assert "quicktok-v1" in out.stdout


def test_every_family_counts_with_sockets_disabled() -> None:
    # A fresh interpreter where creating a socket or resolving a host raises: loading each
    # family and counting must not touch the network.
    code = textwrap.dedent(f"""
        import socket
        def refuse(*a, **k):
            raise OSError("network disabled in this test")
        socket.socket = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from budgetlens.tokens.core import get_tokenizer
        for name in {[*EXACT, "claude_approx", "gemini_approx"]!r}:
            print(name, get_tokenizer(name).count("offline 你好 🎉"))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"HF_HUB_OFFLINE": "0", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    counts = dict(line.split() for line in out.stdout.splitlines())
    assert set(counts) == set(EXACT) | {"claude_approx", "gemini_approx"}
    assert all(int(n) > 0 for n in counts.values())


def test_an_unknown_name_is_still_refused_with_what_to_use() -> None:
    with pytest.raises(TokenizerError, match="use cl100k_base or o200k_base, a model name"):
        get_tokenizer("no-such-model-xyz")
