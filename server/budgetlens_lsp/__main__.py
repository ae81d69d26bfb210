from budgetlens_cli.main import main

raise SystemExit(main())
