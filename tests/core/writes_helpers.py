"""The small workspace of the write tests (tests/core/test_writes.py and
tests/cli/test_safe_writes.py)."""

from __future__ import annotations

from pathlib import Path

from tests.core.contract.helpers import make_workspace

PIPELINE = ("settings:\n  max_context_tokens: 1800\nsteps:\n"
            "  - {id: a, type: call_model, prompt_key: s}\n")
# b.yaml is made larger than the file size limit of the RLIMIT_FSIZE test; a.yaml is not
PADDING = "# padding\n" * 400


def write_workspace(root: Path) -> Path:
    make_workspace(root, config={"model_context_window": 2000, "model_max_tokens": 500},
                   prompts={"s.txt": "x"},
                   pipelines={"a.yaml": PIPELINE, "b.yaml": "\ufeff" + PADDING + PIPELINE})
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (temporary files included) and its bytes."""
    return {str(p.relative_to(root)): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}
