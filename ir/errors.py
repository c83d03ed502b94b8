"""Errors raised by the IR. Each message says what failed, where, why and what to do."""

from __future__ import annotations


class ParityError(Exception):
    """Base of every error parity raises on purpose."""


class TypeRuleError(ParityError, TypeError):
    """Operands or attributes of an op do not fit its type rule.

    The message names the op, the offending operand or attribute, and the types seen.
    """

    def __init__(self, op: str, message: str, operand: int | str | None = None):
        self.op = op
        self.operand = operand
        where = ""
        if isinstance(operand, int):
            where = f" (operand {operand})"
        elif isinstance(operand, str):
            where = f" (attribute {operand!r})"
        super().__init__(f"{op}{where}: {message}")


class VerifyError(ParityError):
    """A graph breaks an invariant; the message shows the offending node in context."""


class ParseError(ParityError, SyntaxError):
    """IR text that does not follow the grammar; carries line and column (1-based)."""

    def __init__(self, message: str, line: int, column: int, source_line: str = ""):
        self.line = line
        self.column = column
        pointer = f"\n  {source_line}\n  {' ' * (column - 1)}^" if source_line else ""
        super().__init__(f"line {line}, column {column}: {message}{pointer}")


class UnsupportedOpError(ParityError):
    """An op that no chosen backend claims (raised in strict mode)."""
