"""budgetlens: the token budget of LLM pipelines, checked and clamped.

The public API is re-exported here; every function takes and returns plain typed data.
The core is pure: no language-server imports, no network, no global mutable state.
"""

from budgetlens.injection import (
    Bucket,
    BucketFile,
    InjectionPlan,
    InjectionRequest,
    KnowledgeCardCandidate,
    TierThresholds,
    UnifiedInjectionManifest,
    plan_injection,
)
from budgetlens.overlap import (
    BucketFileRef,
    OverlapResult,
    background_covered_by_cards,
    detect_bucket_overlap,
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
from budgetlens.tokens import (
    DEFAULT_TOKENIZER,
    TokenCounter,
    Tokenizer,
    TokenizerError,
    get_tokenizer,
)
from budgetlens.unified_budget import (
    UnifiedBudget,
    UnifiedContextBudgetPolicy,
    compute_unified_budget,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_TOKENIZER",
    "Bucket",
    "BucketFile",
    "BucketFileRef",
    "Diagnostic",
    "InjectionPlan",
    "InjectionRequest",
    "KnowledgeCardCandidate",
    "LineIndex",
    "Location",
    "OverlapResult",
    "Position",
    "Range",
    "Related",
    "Severity",
    "TextEdit",
    "TierThresholds",
    "TokenCounter",
    "Tokenizer",
    "TokenizerError",
    "UnifiedBudget",
    "UnifiedContextBudgetPolicy",
    "UnifiedInjectionManifest",
    "apply_text_edits",
    "background_covered_by_cards",
    "compute_unified_budget",
    "detect_bucket_overlap",
    "get_tokenizer",
    "plan_injection",
]
