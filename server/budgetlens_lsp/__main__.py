from budgetlens_lsp.cli.main import main

raise SystemExit(main())
