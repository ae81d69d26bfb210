"""The language server's features, one module each: diagnostics, code lenses, hover, code
actions, commands, and the analysis of JSON documents (the cut of a truncated reply)."""
