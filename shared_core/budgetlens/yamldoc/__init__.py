"""YAML documents with source positions, and verified edits to them.

Owns the safe, positioned YAML reader (``parse``: plain values plus the range of every key
and value; no tag constructed, alias expansion bounded; it reads the parser's events through
``simple`` or ``compose``), the mapping of a position inside a
string value back onto the file (``scalar``), minimal text edits in a file's own style
(``edit``), and the verification every text edit passes before it leaves the core
(``verify``: applied in memory, re-parsed, the loaded data compared).
"""
