"""``budgetlens.contract.escape``: each format's rule, with values written by hand."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from budgetlens.contract import escape


def test_visible_writes_what_is_not_printable_as_repr_does() -> None:
    assert escape.visible("a\nb\x1b[0m\u2028\x85c") == "a\\nb\\x1b[0m\\u2028\\x85c"
    assert escape.visible("tab\there", keep="\t") == "tab\there"
    assert escape.visible("bad\udcff") == "bad\\xff"  # a byte of a non-UTF-8 file name
    assert escape.visible("日本 é") == "日本 é"


def test_text_makes_workflow_commands_inert() -> None:
    assert escape.text("::error::x") == "\\x3a:error::x"
    assert escape.text("  ::warning::x") == "  \\x3a:warning::x"
    assert escape.text("a ##[error]b") == "a #\\x23[error]b"
    assert escape.text("a::b") == "a::b"  # not at the start of a line
    assert escape.text("x\n::stop-commands::t") == "x\\n::stop-commands::t"


def test_github_escaping_follows_the_toolkit() -> None:
    assert escape.github_data("50%\r\n\x1b") == "50%25%0D%0A\\x1b"
    assert escape.github_property("a:b,c") == "a%3Ab%2Cc"


def test_xml_text_is_xml_1_0() -> None:
    shown = escape.xml_text("a\x01b\ufffec\udcff<&>")
    assert shown == "a\\x01b\\ufffec\\xff<&>"
    element = ET.Element("t", name=shown)
    element.text = shown
    assert ET.fromstring(ET.tostring(element, encoding="unicode")).get("name") == shown


def test_markdown_code_and_text() -> None:
    assert escape.markdown_code("a|b") == "`a\\|b`"
    assert escape.markdown_code("a`b") == "``a`b``"
    assert escape.markdown_code("`a") == "`` `a ``"
    assert escape.markdown_code(" a ") == "`  a  `"
    assert escape.markdown_code("<!--") == "&lt;\\!\\-\\-"
    assert escape.markdown_code("a\nb") == "a\\\\nb"
    assert escape.markdown(" x ") == "&#32;x&#32;"


def test_json_text_writes_lone_surrogates_visibly() -> None:
    document = json.dumps({"file": "b\udcfe.yaml"}, ensure_ascii=False)
    shown = escape.json_text(document)
    shown.encode("utf-8")
    assert json.loads(shown) == {"file": "b\\xfe.yaml"}


def test_xml_text_escapes_exactly_what_xml_1_0_forbids() -> None:
    """XML 1.0's ``Char``: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
    [#x10000-#x10FFFF]. Every other code point is escaped, and no allowed one."""
    allowed = [(0x9, 0x9), (0xA, 0xA), (0xD, 0xD), (0x20, 0xD7FF), (0xE000, 0xFFFD),
               (0x10000, 0x10FFFF)]

    def is_char(code: int) -> bool:
        return any(lo <= code <= hi for lo, hi in allowed)
    wrong = [code for code in range(0x110000)
             if (escape._NOT_XML.fullmatch(chr(code)) is None) != is_char(code)]
    assert wrong == []
