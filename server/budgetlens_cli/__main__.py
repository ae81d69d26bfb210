"""``python -m budgetlens_cli``: the ``budgetlens`` command without the console script."""

from budgetlens_cli.main import main

raise SystemExit(main())
