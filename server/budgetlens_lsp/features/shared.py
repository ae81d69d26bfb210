"""What several features use: the command names, the read rule every request's URI goes
through, and the labels of a step's budget.

The modules of ``features/`` are of two kinds.

- *Feature* modules answer the client: ``server.py`` registers their handlers.
  They are ``actions``, ``commands``, ``diagnostics``, ``documents``, ``hover``,
  ``lenses``, ``lifecycle`` and ``models``. A feature never imports another feature.
- *Shared* modules hold what features have in common, and import no feature:
  ``context`` (the server context), ``edits`` (workspace edits of a clamp plan),
  ``json_documents`` (a JSON buffer's diagnostics, code action and hierarchy context),
  ``views`` (how a command's result is shown) and this module.

``tests/project/test_architecture.py`` checks both rules.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from urllib.parse import unquote, urlsplit

from budgetlens.contract.results import StepBudget
from budgetlens.contract.step_text import SumStyle, sum_text
from budgetlens.files import is_inside
from budgetlens_lsp.convert import format_int, path_from_uri
from budgetlens_lsp.features.state import ServerState

# --- the commands --------------------------------------------------------------------------

SHOW_HIERARCHY = "budgetlens.showHierarchyContext"
CLAMP_ALL = "budgetlens.clampAll"
SHOW_REPORT = "budgetlens.showBudgetReport"
SHOW_LOCATION = "budgetlens.showLocation"
#: Applies one quick-fix's edit; what a client without code-action literals runs.
APPLY_FIX = "budgetlens.applyFix"
#: Every command the server registers (``executeCommandProvider.commands``).
ALL = (SHOW_HIERARCHY, CLAMP_ALL, SHOW_REPORT, SHOW_LOCATION, APPLY_FIX)


class CommandError(ValueError):
    """Bad command arguments; becomes an LSP "invalid params" error."""


# --- the read rule -------------------------------------------------------------------------

#: The rule every refusal names.
READ_RULE = "budgetlens reads only open documents and files inside the workspace folders"


def outside_reason(path: str, roots: Sequence[str]) -> str | None:
    """Why the file ``path`` (absolute, normalised) may not be read, or None if it may: it
    must lie inside one of ``roots`` as written and after resolving symlinks."""
    if "\0" in path:
        return "is not a valid path"
    if not roots:
        return "is outside the workspace folders (the client opened none)"
    if any(is_inside(path, root) for root in roots):
        return None
    if any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots):
        return "leads outside the workspace folders through a symlink"
    return "is outside the workspace folders"


def command_target(uri: str, documents: Mapping[str, str], roots: Sequence[str],
                   open_paths: Collection[str] = ()) -> str:
    """The path (the index's key) a command may read for ``uri``; ``CommandError`` naming
    :data:`READ_RULE` otherwise.

    ``documents`` maps the URI of each open document to its key, ``open_paths`` holds those
    keys; ``roots`` are the workspace folders (absolute, normalised).
    """
    key = documents.get(uri)
    if key is not None:
        return key
    if not uri.startswith("file:"):
        raise CommandError(f"{uri} is not an open document and not a file: URI; {READ_RULE}")
    if ".." in unquote(urlsplit(uri).path).split("/"):  # "..", "%2e%2e", "a%2f..%2fb"
        raise CommandError(f"{uri} has a '..' segment; {READ_RULE}")
    path = path_from_uri(uri)
    if path is None:
        raise CommandError(f"{uri} is not a file path; {READ_RULE}")
    key = os.path.normpath(os.path.abspath(str(path)))
    if key in open_paths:
        return key
    reason = outside_reason(key, roots)
    if reason is not None:
        raise CommandError(f"{uri} {reason}; {READ_RULE}")
    return key


def check_target(ctx: ServerState, uri: str) -> str:
    """What a URI may read (:func:`command_target`: an open document, or a file inside the
    workspace folders); ``CommandError`` naming the rule otherwise."""
    docs = ctx.session.documents
    return command_target(uri, {u: d.path for u, d in docs.items()}, ctx.session.roots,
                          {d.path for d in docs.values()})


def readable(ctx: ServerState, uri: str) -> str | None:
    """The key of a document lenses, hover and code actions may read, by the commands'
    rule; None (the request answers with nothing) for anything else."""
    try:
        return check_target(ctx, uri)
    except CommandError:
        return None


# --- a step's budget as text ---------------------------------------------------------------

def step_label(step: StepBudget) -> str:
    return f"{os.path.basename(step.pipeline)} › {step.step}"


def headroom_text(step: StepBudget) -> str:
    if step.headroom < 0:
        return f"{format_int(-step.headroom)} over"
    return f"{format_int(step.headroom)} free"


def budget_sum(step: StepBudget) -> str:
    """A lens's and a hover's sum of ``step``: ``≈ fixed 950 (tools 98) + ... = 5,000 /
    8192 (3,192 free)`` (the terms and their rules: ``contract/step_text.py``)."""
    approx = "≈ " if step.approximate else ""  # the model's tokenizer is approximated
    return (f"{approx}{sum_text(step, SumStyle.LENS)} / {step.window.value}"
            f" ({headroom_text(step)})")
