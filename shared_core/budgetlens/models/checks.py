"""The rules ``budgetlens models --doctor`` checks each model entry against.

Each rule has a stable id (used by corrections.json to fix or justify a finding) and looks
only at the entry's numbers, so the loader, the refresh script and the doctor agree.
"""

from __future__ import annotations

OUTPUT_NOT_BELOW_WINDOW = "output-not-below-window"
INPUT_ABOVE_WINDOW = "input-above-window"
INPUT_PLUS_OUTPUT_OVER_WINDOW = "input-plus-output-over-window"
SOURCES_DISAGREE = "sources-disagree"

#: Each rule id with what it means (``budgetlens models --doctor`` and docs/models.md).
RULES = {
    OUTPUT_NOT_BELOW_WINDOW: "the output limit is not below the window: a request that"
                             " asks for it leaves no room for input",
    INPUT_ABOVE_WINDOW: "the input limit is above the window",
    INPUT_PLUS_OUTPUT_OVER_WINDOW: "input limit + output limit exceed the window (an input"
                                   " limit equal to the window restates the window and is"
                                   " not flagged)",
    SOURCES_DISAGREE: "the two sources give different numbers for the model",
}


def findings(window: int, max_input: int | None, max_output: int | None
             ) -> list[tuple[str, str]]:
    """(rule id, message) for each rule the numbers break."""
    out: list[tuple[str, str]] = []
    if max_output is not None and max_output >= window:
        out.append((OUTPUT_NOT_BELOW_WINDOW,
                    f"max output {max_output:,} is not below the window {window:,}"))
    if max_input is not None and max_input > window:
        out.append((INPUT_ABOVE_WINDOW,
                    f"max input {max_input:,} is above the window {window:,}"))
    elif max_input is not None and max_output is not None and max_input < window \
            and max_input + max_output > window:
        out.append((INPUT_PLUS_OUTPUT_OVER_WINDOW,
                    f"max input {max_input:,} + max output {max_output:,} ="
                    f" {max_input + max_output:,} exceed the window {window:,}"))
    return out
