"""JSON continuation: reading a model reply cut off mid-JSON, and continuing it.

Owns finding the cut and closing the JSON (``cut``), on the tokens, kinds and C scanners of
``syntax``, with long arrays skipped in bulk as runs (``runs``); the budgeted rendering of the
hierarchy context with the cut marked (``render``), which prints values one member or item per
line (``pretty``); ``get_contexts`` (``contexts``); merging a continuation onto the cut text by
its overlap (``merge``) and the continuation loop with a model function passed in (``loop``).
"""
