"""The text format's lexer: the source text with its line positions, and its tokens.

:mod:`.parser` reads tokens from here; errors point at a line and column of the text.

Example::

    >>> from parity.ir.lexer import Source, tokenize
    >>> [(t.kind, t.text) for t in tokenize(Source('%y = tanh(%x) loc("m.py", 3)'))][:5]
    [('VALUE', 'y'), ('PUNCT', '='), ('IDENT', 'tanh'), ('PUNCT', '('), ('VALUE', 'x')]
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from .errors import ParseError

__all__ = ["Source", "Token", "tokenize"]


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # VALUE IDENT INT FLOAT STRING HEX PUNCT EOF
    text: str  # the source text (for STRING: the decoded string; for VALUE: the name without %)
    pos: int  # offset of the first character in the source


_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<VALUE>%[A-Za-z0-9_.]+)
  | (?P<HEX>0x[0-9a-fA-F]*)
  | (?P<FLOAT>-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)|-(?:inf|nan)\b)
  | (?P<INT>-?\d+)
  | (?P<IDENT>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<STRING>")
  | (?P<PUNCT>->|//|[()\[\]{}<>,:=@*+%-])
    """,
    re.VERBOSE,
)
_STRING_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
_UNICODE_ESCAPE = re.compile(r"u\{([0-9a-fA-F]{1,6})\}")


class Source:
    """The text being parsed, with where each line starts (for errors that point)."""

    def __init__(self, text: str):
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def error(self, message: str, pos: int) -> ParseError:
        line = bisect.bisect_right(self.line_starts, pos)
        start = self.line_starts[line - 1]
        end = self.text.find("\n", start)
        source = self.text[start: len(self.text) if end < 0 else end]
        return ParseError(message, line, pos - start + 1, source)

    def line_of(self, pos: int) -> int:
        return bisect.bisect_right(self.line_starts, pos)


def tokenize(source: Source) -> list[Token]:
    """Every token of ``source``, ending with an EOF token."""
    tokens, pos, text = [], 0, source.text
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise source.error(f"unexpected character {text[pos]!r}", pos)
        kind = m.lastgroup
        if kind == "STRING":
            value, end = _read_string(source, pos)
            tokens.append(Token("STRING", value, pos))
            pos = end
            continue
        if kind != "ws":
            word = m.group()
            tokens.append(Token(kind, word[1:] if kind == "VALUE" else word, pos))
        pos = m.end()
    # An error at the end points just past the last token, not at a blank last line.
    end = len(text.rstrip(" \t\r\n"))
    tokens.append(Token("EOF", "", end))
    return tokens


def _read_string(source: Source, start: int) -> tuple[str, int]:
    """Decode the string literal whose opening quote is at ``start``; return it and its end."""
    text, out, pos = source.text, [], start + 1
    while True:
        if pos >= len(text) or text[pos] == "\n":
            raise source.error("unterminated string (escape newlines as \\n)", start)
        ch = text[pos]
        if ch == '"':
            return "".join(out), pos + 1
        if ch != "\\":
            out.append(ch)
            pos += 1
            continue
        nxt = text[pos + 1: pos + 2]
        if nxt in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[nxt])
            pos += 2
            continue
        m = _UNICODE_ESCAPE.match(text, pos + 1)
        if nxt != "u" or m is None or int(m.group(1), 16) > 0x10FFFF:
            raise source.error(r'unknown escape; strings know \\ \" \n \t \r and \u{hex}', pos)
        out.append(chr(int(m.group(1), 16)))
        pos = m.end()
