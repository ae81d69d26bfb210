"""The test suite. Every test module is imported as ``tests.<folder>.<module>``, so this runs
first: the user's models.json (``$XDG_CONFIG_HOME/budgetlens/``) is an empty private folder,
never the real user's, so no test depends on the machine's files (tests of the user's file
set ``XDG_CONFIG_HOME`` themselves). Processes the tests start inherit it."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

os.environ["XDG_CONFIG_HOME"] = _CONFIG_HOME = tempfile.mkdtemp(prefix="budgetlens-test-config-")
atexit.register(shutil.rmtree, _CONFIG_HOME, True)
