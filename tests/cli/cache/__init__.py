"""The result cache of ``budgetlens check`` (``budgetlens_cli.cache``, ``cache_store``), by
behaviour: unreadable inputs, racy stats, relinked inputs."""
