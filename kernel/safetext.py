"""Text from a file or a target, made safe to print: on a terminal, and inside Markdown.

Names and reasons in a report come from files a person wrote or a folder that came from
elsewhere: an SLO name with a newline must not start a line of `report.md`, a `|` must not open a
table cell, an escape sequence must not reach a terminal. HTML is escaped by the templates'
autoescape; these two cover the other outputs.
"""

from __future__ import annotations

import re

__all__ = ["markdown_text", "terminal_text"]

_BLOCK_START = re.compile(r"^(\s*)(#+|[-+*]|\d+[.)])(?=\s)")
_MARKDOWN_SPECIAL = str.maketrans({"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "`": "\\`",
                                   "<": "&lt;", ">": "&gt;"})


def terminal_text(text: str) -> str:
    """`text` with every character a terminal would act on (controls, escapes, bidi overrides,
    line breaks) written as its Python escape, so a printed line stays one visible line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def markdown_text(value: object) -> str:
    """`value` as text that stays inside its place in a Markdown line: control characters and line
    breaks become spaces, table, link, code and HTML characters are escaped, and a leading heading
    or list marker is escaped so the text cannot start a block."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(value)).translate(_MARKDOWN_SPECIAL)
    return _BLOCK_START.sub(_escape_marker, text)


def _escape_marker(match: re.Match[str]) -> str:
    """A backslash before a marker's punctuation (after a numbered item's digits)."""
    marker = match.group(2)
    return match.group(1) + (marker[:-1] + "\\" + marker[-1] if marker[0].isdigit() else "\\" + marker)
