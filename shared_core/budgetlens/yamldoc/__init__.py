"""YAML documents with source positions, and verified edits to them.

Owns the safe, positioned YAML reader (plain values plus the range of every key and value;
no tag constructed, alias expansion bounded) and the verification every text edit passes
before it leaves the core (applied in memory, re-parsed, the loaded data compared).
"""
