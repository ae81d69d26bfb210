"""budgetlens language server: a thin adapter over the core (``budgetlens``)."""

from budgetlens import __version__

__all__ = ["__version__"]
