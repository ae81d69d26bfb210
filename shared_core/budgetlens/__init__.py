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
- tokens: ``get_tokenizer`` (``TokenizerError``), ``TokenCounter``, ``TokenizerLike`` (what
  every ``tokenizer`` argument accepts).

Everything else stays importable from the subpackage that owns it:

- ``budgetlens.contract``: config.json, pipeline files and ``extends``, templates, the policy,
  the check (``contract.check``: ``find_pipelines``, ``StepBudget``, ``Term``, ...), clamp
  plans (``contract.plan``), the per-step injection check and the pipeline JSON Schema;
- ``budgetlens.continuation``: the cut of a JSON text (``cut``), its budgeted rendering
  (``render``), ``get_contexts`` (``contexts``), the overlap merge (``merge``), the
  continuation loop and its prompt (``loop``);
- ``budgetlens.context``: the unified budget, bucket overlap (``overlap``), injection plans,
  the context packer (``packer``, with the intent map), history trimming, input errors;
- ``budgetlens.tokens``: tokenizers and ``TokenCounter`` (``tokens.core``);
- ``budgetlens.yamldoc``: positioned YAML and the verification of text edits;
- ``budgetlens.source`` (positions, ranges, diagnostics, text edits), ``budgetlens.codes``
  (the diagnostic codes), ``budgetlens.files`` (where files are read from) and
  ``budgetlens.writes`` (all-or-nothing writes of edited files).
"""

from budgetlens.context.history import HistoryTrim, trim_history
from budgetlens.context.injection import InjectionPlan, InjectionRequest, plan_injection
from budgetlens.context.packer import PackResult, pack_context
from budgetlens.context.unified_budget import (
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
from budgetlens.contract.model import CheckOptions, ClampValues, PipelineReport
from budgetlens.contract.plan import ClampPlan, apply_plan, clamp_plan
from budgetlens.files import DiskFiles
from budgetlens.source import Diagnostic
from budgetlens.tokens.core import TokenCounter, TokenizerError, TokenizerLike, get_tokenizer

#: The version of the distribution (the one home of the number: the CLI's ``--version`` and
#: the language server's ``serverInfo`` read it from here).
__version__ = "0.1.0"

__all__ = [
    "BudgetCache",
    "Case",
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
    "TokenCounter",
    "TokenizerError",
    "TokenizerLike",
    "UnifiedBudget",
    "UnifiedContextBudgetPolicy",
    "apply_plan",
    "check_pipeline",
    "clamp_plan",
    "compute_unified_budget",
    "continue_json",
    "continue_json_async",
    "get_contexts",
    "get_tokenizer",
    "merge_with_overlap",
    "pack_context",
    "plan_injection",
    "trim_history",
]
