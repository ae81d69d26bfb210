"""budgetlens: the token budget of LLM pipelines, checked and clamped.

This module is the public API: the entry functions and the types they take and return. The
core is pure: no language-server imports, no network, no global mutable state; every function
takes and returns plain typed data.

- the budget contract: ``check_pipeline`` (``CheckOptions``, ``BudgetCache``, ``DiskFiles``
  -> ``PipelineReport``, with its ``Diagnostic`` list and ``ClampValues``), ``clamp_plan``
  and ``apply_plan`` (``ClampPlan``);
- JSON continuation: ``get_contexts`` (``JsonContexts``), ``merge_with_overlap``
  (``MergeResult``), ``continue_json`` and ``continue_json_async`` (``ContinuationResult``,
  ``Iteration``, ``Outcome``, ``Case``, ``ModelReplyError``);
- context at run time: ``compute_unified_budget`` (``UnifiedContextBudgetPolicy`` ->
  ``UnifiedBudget``), ``plan_injection`` (``InjectionRequest`` -> ``InjectionPlan``),
  ``pack_context`` (``PackResult``), ``trim_history`` (``HistoryTrim``);
- request time: ``fit_request`` and ``check_request`` (-> ``RequestFit``, with its
  ``Breakdown``; ``RequestDoesNotFit``), ``count_request`` (``RequestCount``),
  ``continue_json_chat`` and ``continue_json_chat_async`` (``ChatContinuationResult``,
  ``ChatCall``), ``read_reply`` and ``stopped_at_length`` for response dicts;
- tokens: ``get_tokenizer`` (``TokenizerError``), ``TokenCounter``, ``TokenizerLike`` (what
  every ``tokenizer`` argument accepts).

Everything else stays importable from the subpackage that owns it:

- ``budgetlens.contract``: config.json, pipeline files and ``extends``, templates, the policy,
  the check (``contract.check``: ``find_pipelines``, ``StepBudget``, ``Term``, ...), clamp
  plans (``contract.plan``), the per-step injection check and the pipeline JSON Schema;
- ``budgetlens.continuation``: the cut of a JSON text (``cut``, with ``syntax`` and
  ``runs``), its budgeted rendering (``render``, printing with ``pretty``), ``get_contexts``
  (``contexts``), the overlap merge (``merge``), the continuation loop and its prompt
  (``loop``);
- ``budgetlens.assembly``: the unified budget, bucket overlap (``overlap``), injection plans,
  the context packer (``packer``, with the intent map), history trimming, input errors;
- ``budgetlens.request``: chat framing per family (``framing``), a request's limits and
  margin (``limits``), fitting (``fit``) and the chat continuation loop (``chat_loop``);
- ``budgetlens.tokens``: tokenizers and ``TokenCounter`` (``tokens.core``);
- ``budgetlens.yamldoc``: positioned YAML and the verification of text edits;
- ``budgetlens.source`` (positions, ranges, diagnostics, text edits), ``budgetlens.codes``
  (the diagnostic codes), ``budgetlens.files`` (where files are read from) and
  ``budgetlens.writes`` (all-or-nothing writes of edited files).

The names above are exported lazily (a module ``__getattr__``, PEP 562): ``import budgetlens``
loads none of its submodules, and a name imports the module that owns it on first use. So the
language server's start, ``budgetlens --version`` and ``budgetlens --help`` do not wait for
pydantic, PyYAML or tiktoken before they need them.
"""

from __future__ import annotations

import importlib
import os

#: ``typing.TYPE_CHECKING`` without importing ``typing`` (a tenth of a cached ``check``'s
#: start): type checkers take any ``TYPE_CHECKING`` as true.
TYPE_CHECKING = False
if TYPE_CHECKING:  # the real imports, for type checkers; at run time see __getattr__
    from typing import Any

    from budgetlens.assembly.history import HistoryTrim, trim_history
    from budgetlens.assembly.injection import InjectionPlan, InjectionRequest, plan_injection
    from budgetlens.assembly.packer import PackResult, pack_context
    from budgetlens.assembly.unified_budget import (
        UnifiedBudget,
        UnifiedContextBudgetPolicy,
        compute_unified_budget,
    )
    from budgetlens.continuation.contexts import JsonContexts, get_contexts
    from budgetlens.continuation.loop import (
        Case,
        ContinuationResult,
        Iteration,
        ModelReplyError,
        Outcome,
        continue_json,
        continue_json_async,
    )
    from budgetlens.continuation.merge import MergeResult, merge_with_overlap
    from budgetlens.contract.cache import BudgetCache
    from budgetlens.contract.check import check_pipeline
    from budgetlens.contract.plan import ClampPlan, apply_plan, clamp_plan
    from budgetlens.contract.results import CheckOptions, ClampValues, PipelineReport
    from budgetlens.files import DiskFiles
    from budgetlens.request.chat_loop import (
        ChatCall,
        ChatContinuationResult,
        continue_json_chat,
        continue_json_chat_async,
        read_reply,
        stopped_at_length,
    )
    from budgetlens.request.fit import (
        Breakdown,
        RequestCount,
        RequestDoesNotFit,
        RequestFit,
        check_request,
        count_request,
        fit_request,
    )
    from budgetlens.source import Diagnostic
    from budgetlens.tokens.core import TokenCounter, TokenizerError, TokenizerLike, get_tokenizer

#: Each public name and the module that defines it (imported on first use, for start-up speed).
_EXPORTS: dict[str, str] = {
    "Breakdown": "budgetlens.request.fit",
    "BudgetCache": "budgetlens.contract.cache",
    "Case": "budgetlens.continuation.loop",
    "ChatCall": "budgetlens.request.chat_loop",
    "ChatContinuationResult": "budgetlens.request.chat_loop",
    "CheckOptions": "budgetlens.contract.results",
    "ClampPlan": "budgetlens.contract.plan",
    "ClampValues": "budgetlens.contract.results",
    "ContinuationResult": "budgetlens.continuation.loop",
    "Diagnostic": "budgetlens.source",
    "DiskFiles": "budgetlens.files",
    "HistoryTrim": "budgetlens.assembly.history",
    "InjectionPlan": "budgetlens.assembly.injection",
    "InjectionRequest": "budgetlens.assembly.injection",
    "Iteration": "budgetlens.continuation.loop",
    "JsonContexts": "budgetlens.continuation.contexts",
    "MergeResult": "budgetlens.continuation.merge",
    "ModelReplyError": "budgetlens.continuation.loop",
    "Outcome": "budgetlens.continuation.loop",
    "PackResult": "budgetlens.assembly.packer",
    "PipelineReport": "budgetlens.contract.results",
    "RequestCount": "budgetlens.request.fit",
    "RequestDoesNotFit": "budgetlens.request.fit",
    "RequestFit": "budgetlens.request.fit",
    "TokenCounter": "budgetlens.tokens.core",
    "TokenizerError": "budgetlens.tokens.core",
    "TokenizerLike": "budgetlens.tokens.core",
    "UnifiedBudget": "budgetlens.assembly.unified_budget",
    "UnifiedContextBudgetPolicy": "budgetlens.assembly.unified_budget",
    "apply_plan": "budgetlens.contract.plan",
    "check_pipeline": "budgetlens.contract.check",
    "check_request": "budgetlens.request.fit",
    "clamp_plan": "budgetlens.contract.plan",
    "compute_unified_budget": "budgetlens.assembly.unified_budget",
    "continue_json": "budgetlens.continuation.loop",
    "continue_json_async": "budgetlens.continuation.loop",
    "continue_json_chat": "budgetlens.request.chat_loop",
    "continue_json_chat_async": "budgetlens.request.chat_loop",
    "count_request": "budgetlens.request.fit",
    "fit_request": "budgetlens.request.fit",
    "get_contexts": "budgetlens.continuation.contexts",
    "get_tokenizer": "budgetlens.tokens.core",
    "merge_with_overlap": "budgetlens.continuation.merge",
    "pack_context": "budgetlens.assembly.packer",
    "plan_injection": "budgetlens.assembly.injection",
    "read_reply": "budgetlens.request.chat_loop",
    "stopped_at_length": "budgetlens.request.chat_loop",
    "trim_history": "budgetlens.assembly.history",
}

#: The version of the distribution (the CLI's ``--version``, the language server's
#: ``serverInfo`` and the result cache's key read it from here). It comes from the git tag:
#: setuptools-scm writes it to ``_version.txt`` at build time; read on first use (see
#: ``__getattr__``), with no import.
__version__: str

__all__ = [
    "Breakdown",
    "BudgetCache",
    "Case",
    "ChatCall",
    "ChatContinuationResult",
    "CheckOptions",
    "ClampPlan",
    "ClampValues",
    "ContinuationResult",
    "Diagnostic",
    "DiskFiles",
    "HistoryTrim",
    "InjectionPlan",
    "InjectionRequest",
    "Iteration",
    "JsonContexts",
    "MergeResult",
    "ModelReplyError",
    "Outcome",
    "PackResult",
    "PipelineReport",
    "RequestCount",
    "RequestDoesNotFit",
    "RequestFit",
    "TokenCounter",
    "TokenizerError",
    "TokenizerLike",
    "UnifiedBudget",
    "UnifiedContextBudgetPolicy",
    "apply_plan",
    "check_pipeline",
    "check_request",
    "clamp_plan",
    "compute_unified_budget",
    "continue_json",
    "continue_json_async",
    "continue_json_chat",
    "continue_json_chat_async",
    "count_request",
    "fit_request",
    "get_contexts",
    "get_tokenizer",
    "merge_with_overlap",
    "pack_context",
    "plan_injection",
    "read_reply",
    "stopped_at_length",
    "trim_history",
]


def _read_version() -> str:
    """``_version.txt`` beside this file; else the installed distribution's metadata (an
    install that did not write the file); else ``0+unknown`` (a bare copy of the sources)."""
    try:
        with open(os.path.join(os.path.dirname(__file__), "_version.txt"),
                  encoding="utf-8") as f:
            text = f.read().strip()
        if text:
            return text
    except OSError:
        pass
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("budgetlens")
    except (ImportError, PackageNotFoundError):
        return "0+unknown"


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (lazy, for start-up speed)."""
    if name == "__version__":
        globals()[name] = value = _read_version()
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
