"""Expected budgets of the examples workspace, derived by hand from the contract
(DESIGN.md §1) with plain tokenizer counts as the independent reference.

    fixed = tokens(prompt file) + tokens(template with every {placeholder} emptied)
            + format_overhead_tokens (32 in examples/config.json)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from budgetlens.tokens.core import get_tokenizer

WINDOW = 8192  # config.json model_context_window
OVERHEAD = 32  # config.json format_overhead_tokens
MARGIN = 128  # base.yaml budget_safety_margin_tokens

# long_report.yaml, step write_report: its template with {outline} and {context} emptied
# and {{ }} unescaped, as written out by hand from the YAML literal block.
WRITE_REPORT_TEMPLATE = ('Outline:\n\n\nSource material:\n\n\n'
                         'Write the full report as JSON: {"title": ..., "sections": [...]}\n')
OUTLINE_TEMPLATE = "Outline a report on: "


def tokens(text: str) -> int:
    return get_tokenizer("cl100k_base").count(text)


@dataclass(frozen=True)
class Budget:
    fixed: int
    history: int
    context: int
    output: int
    margin: int = MARGIN
    window: int = WINDOW

    @property
    def total(self) -> int:
        return self.fixed + self.history + self.context + self.output + self.margin

    @property
    def headroom(self) -> int:
        return self.window - self.total

    def lens(self) -> str:
        state = (f"{-self.headroom:,} over" if self.headroom < 0 else f"{self.headroom:,} free")
        return (f"fixed {self.fixed} + history {self.history} + context {self.context} + output"
                f" {self.output} + margin {self.margin} = {self.total} / {self.window} ({state})")


def write_report(root: Path, *, context: int = 6144, output: int = 2048) -> Budget:
    prompt = (root / "prompts" / "report.txt").read_text("utf-8")
    fixed = tokens(prompt) + tokens(WRITE_REPORT_TEMPLATE) + OVERHEAD
    return Budget(fixed=fixed, history=0, context=context, output=output)


def outline(root: Path, *, context: int = 6144) -> Budget:
    prompt = (root / "prompts" / "report.txt").read_text("utf-8")
    return Budget(fixed=tokens(prompt) + tokens(OUTLINE_TEMPLATE) + OVERHEAD, history=0,
                  context=context, output=256)


# multilingual.yaml, step answer_ja: "参考資料:\n{context}\n\nお客様の質問: {question}" emptied
ANSWER_JA_TEMPLATE = "参考資料:\n\n\nお客様の質問: "


def answer_ja(root: Path, *, context: int = 4096, output: int = 800) -> Budget:
    prompt = (root / "prompts" / "multilingual.txt").read_text("utf-8")
    fixed = tokens(prompt) + tokens(ANSWER_JA_TEMPLATE) + OVERHEAD
    return Budget(fixed=fixed, history=0, context=context, output=output)


# base.yaml, step answer (inherited by support.yaml): its literal block, emptied
ANSWER_TEMPLATE = ("Context documents:\n\n\nCustomer question: \n"
                   "Reply in the customer's language.\n")


def answer(root: Path, *, context: int, output: int = 1024) -> Budget:
    prompt = (root / "prompts" / "answer.txt").read_text("utf-8")
    fixed = tokens(prompt) + tokens(ANSWER_TEMPLATE) + OVERHEAD
    return Budget(fixed=fixed, history=0, context=context, output=output)
