"""budgetlens language server and command-line interface: thin adapters over the core."""

__version__ = "0.1.0"
