"""A corpus of varied strings for comparing token counts with reference implementations.

Hand-picked cases (code, CJK, emoji and ZWJ sequences, combining marks, long whitespace runs,
numbers, special-token text, mixed scripts) plus strings drawn from the same pools by a seeded
random generator, so the corpus is the same on every run. At least 200 strings.
"""

from __future__ import annotations

import random

HAND = [
    "", " ", "\n", "\t", "hello", "Hello, world!", "hello world\n",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "for (let i = 0; i < 10; i++) {\n\tconsole.log(`i=${i}`);\n}\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    '{"key": [1, 2.5, -3e10, true, null], "nested": {"a": "b\\n"}}',
    "<html><body class=\"x\">&nbsp;&amp;</body></html>",
    "你好，世界！这是一个测试。", "日本語のテキストとカタカナ、ひらがな。", "한국어 텍스트입니다.",
    "Привет, мир! Ёлка.", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
    "🎉🎉🎉", "👩‍👩‍👧‍👦 family", "🏳️‍🌈 flag", "👍🏽 thumbs", "emoji at end 😀",
    "e\u0301 combining", "Åström café naïve façade", "ﬁ ligature ＡＢＣ fullwidth",
    " " * 100, "\n" * 50, "\t" * 40, " \n " * 30, "a" + " " * 1000 + "b",
    "    indented\n        more\n", "\r\n windows \r\n lines \r\n", "lone\rcarriage\rreturns",
    "1234567890", "3.14159265358979", "1,000,000 and 1 000 000", "0x1F600 0b1010 1e-9",
    "<|endoftext|>", "<|im_start|>user\nhi<|im_end|>", "<|begin_of_text|><|eot_id|>",
    "[INST] hello [/INST]", "<s> </s> <unk>", "<｜User｜>hi<｜Assistant｜>",
    "don't can't won't I'm you're they've we'll she'd", "DON'T SHOUT", "CamelCaseIdentifier",
    "snake_case_identifier_with_many_parts", "kebab-case-identifier", "ALLCAPS_CONSTANT = 42",
    "https://example.com/path?q=1&r=2#frag", "user@example.com", "C:\\Users\\name\\file.txt",
    "$$\\int_0^1 x^2 dx = \\frac{1}{3}$$", "∀x∈ℝ: x² ≥ 0", "→ ← ↑ ↓ ⇒ ≠ ≤ ≥",
    "\u200b zero width \u200d joiner \ufeff bom", "\x00\x01\x02 control", "\U0001f600\U0001f601",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
    "The quick brown fox jumps over the lazy dog. " * 20,
    "def f():\n" + "    pass\n" * 30, "# Heading\n\n- item 1\n- item 2\n\n```py\nx = 1\n```\n",
    "mixed 中文 and English 와 한국어 with 🎉 emoji 123",
    "....!!!???,,,;;;:::", "------====++++", "a\u0300\u0301\u0302\u0303",
    "ŉ ǅ ǈ ǋ ǲ titlecase", "ß ẞ ς σ Σ", "İstanbul ı i̇",
]

_POOLS = [
    "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789",
    " ", "  ", "\n", "\t", "\r\n", ".,;:!?'\"()[]{}<>/\\|-_=+*&^%$#@~`",
    "你好世界中文测试数据", "こんにちはカタカナ", "한국어텍스트", "Привет", "مرحبا",
    "😀🎉👍🏽👩‍👩‍👧", "é\u0301ñüßøå", "def return class import lambda",
]


def _random_string(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 30)):
        pool = rng.choice(_POOLS)
        if rng.random() < 0.3 and " " in pool:
            parts.append(pool * rng.randint(1, 40))  # long whitespace runs
        else:
            parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 12))))
    return "".join(parts)


def corpus() -> list[str]:
    rng = random.Random(20261123)
    return HAND + [_random_string(rng) for _ in range(250 - len(HAND))]
