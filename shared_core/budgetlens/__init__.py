"""budgetlens: the token budget of LLM pipelines, checked and clamped.

The public API is re-exported here; every function takes and returns plain typed data.
The core is pure: no language-server imports, no network, no global mutable state.
"""

from budgetlens.codes import CODES
from budgetlens.context.history import HistoryTrim, trim_history
from budgetlens.context.injection import (
    Bucket,
    BucketFile,
    InjectionPlan,
    InjectionRequest,
    KnowledgeCardCandidate,
    TierThresholds,
    UnifiedInjectionManifest,
    plan_injection,
)
from budgetlens.context.input_errors import InputError
from budgetlens.context.overlap import (
    BucketFileRef,
    OverlapResult,
    background_covered_by_cards,
    detect_bucket_overlap,
)
from budgetlens.context.packer import (
    IntentMap,
    PackDoc,
    PackResult,
    default_intent_map,
    load_intent_map,
    pack_context,
    parse_docs,
    resolve_intent,
)
from budgetlens.context.unified_budget import (
    UnifiedBudget,
    UnifiedContextBudgetPolicy,
    compute_unified_budget,
)
from budgetlens.continuation.contexts import (
    DEFAULT_BUDGET,
    DEFAULT_MARKER,
    JsonContexts,
    JsonCut,
    JsonProblem,
    get_contexts,
)
from budgetlens.continuation.cut import CutKind
from budgetlens.continuation.loop import (
    CONTINUATION_TEMPLATE,
    Case,
    ContinuationResult,
    Iteration,
    ModelReplyError,
    Outcome,
    build_continuation_prompt,
    continue_json,
    continue_json_async,
)
from budgetlens.continuation.merge import MIN_OVERLAP, MergeResult, merge_with_overlap
from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import check_pipeline
from budgetlens.contract.clamp import compute_clamp
from budgetlens.contract.config import WorkspaceConfig
from budgetlens.contract.discovery import find_pipelines
from budgetlens.contract.injection import INJECTION_CODES, check_injection
from budgetlens.contract.model import (
    CheckOptions,
    ClampValues,
    InjectionCheck,
    PipelineReport,
    StepBudget,
    StepInjection,
    Term,
)
from budgetlens.contract.pipeline import Pipeline, Settings, Step, UserParts
from budgetlens.contract.plan import (
    ClampChange,
    ClampPlan,
    apply_edits,
    apply_plan,
    clamp_plan,
    context_clamp_plan,
    output_clamp_plan,
)
from budgetlens.contract.policy import Policy
from budgetlens.contract.template import parse_template
from budgetlens.files import (
    DiskFiles,
    FileSource,
    OverlayFiles,
    SourceError,
)
from budgetlens.source import (
    Diagnostic,
    LineIndex,
    Location,
    Position,
    Range,
    Related,
    Severity,
    TextEdit,
    apply_text_edits,
)
from budgetlens.tokens.core import (
    DEFAULT_TOKENIZER,
    TokenCounter,
    Tokenizer,
    TokenizerError,
    TokenizerLike,
    get_tokenizer,
)

__version__ = "0.1.0"

__all__ = [
    "CODES",
    "CONTINUATION_TEMPLATE",
    "DEFAULT_BUDGET",
    "DEFAULT_MARKER",
    "DEFAULT_TOKENIZER",
    "INJECTION_CODES",
    "MIN_OVERLAP",
    "Bucket",
    "BucketFile",
    "BucketFileRef",
    "BudgetCache",
    "Case",
    "CheckOptions",
    "ClampChange",
    "ClampPlan",
    "ClampValues",
    "ContinuationResult",
    "CutKind",
    "Diagnostic",
    "DiskFiles",
    "FileSource",
    "HistoryTrim",
    "InjectionCheck",
    "InjectionPlan",
    "InjectionRequest",
    "InputError",
    "IntentMap",
    "Iteration",
    "JsonContexts",
    "JsonCut",
    "JsonProblem",
    "KnowledgeCardCandidate",
    "LineIndex",
    "Location",
    "MergeResult",
    "ModelReplyError",
    "Outcome",
    "OverlapResult",
    "OverlayFiles",
    "PackDoc",
    "PackResult",
    "Pipeline",
    "PipelineReport",
    "Policy",
    "Position",
    "Range",
    "Related",
    "Settings",
    "Severity",
    "SourceError",
    "Step",
    "StepBudget",
    "StepInjection",
    "Term",
    "TextEdit",
    "TierThresholds",
    "TokenCounter",
    "Tokenizer",
    "TokenizerError",
    "TokenizerLike",
    "UnifiedBudget",
    "UnifiedContextBudgetPolicy",
    "UnifiedInjectionManifest",
    "UserParts",
    "WorkspaceConfig",
    "apply_edits",
    "apply_plan",
    "apply_text_edits",
    "background_covered_by_cards",
    "build_continuation_prompt",
    "check_injection",
    "check_pipeline",
    "clamp_plan",
    "compute_clamp",
    "compute_unified_budget",
    "context_clamp_plan",
    "continue_json",
    "continue_json_async",
    "default_intent_map",
    "detect_bucket_overlap",
    "find_pipelines",
    "get_contexts",
    "get_tokenizer",
    "load_intent_map",
    "merge_with_overlap",
    "output_clamp_plan",
    "pack_context",
    "parse_docs",
    "parse_template",
    "plan_injection",
    "resolve_intent",
    "trim_history",
]
