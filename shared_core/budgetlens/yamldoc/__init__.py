"""YAML documents with source positions, and verified edits to them.

Owns the safe, positioned YAML reader (``parse``: plain values plus the range of every key
and value; no tag constructed, alias expansion bounded; it reads the parser's events through
``simple`` or ``compose``), the mapping of a position inside a
string value back onto the file (``scalar``), minimal text edits in a file's own style
(``edit``), and the verification every text edit passes before it leaves the core
(``verify``: applied in memory, re-parsed, the loaded data compared).

The events are libyaml's when PyYAML has it and the text has no tab, so a text with one reads
as ``yaml.safe_load`` reads it. ``simple`` reads a document without anchors, aliases or merge
keys in one pass; ``compose`` builds a light node graph that ``parse`` converts for every
other one. ``incremental`` keeps the last few one-pass readings. It answers a text that
differs from one of them inside one scalar value without reading it again: the value tree is
copied along that path, and the later offsets are moved.
"""
