"""Small workspaces a feature's CLI tests and editor tests both build, one module a feature."""
