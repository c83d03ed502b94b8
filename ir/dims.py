"""Dimension expressions: polynomials over named sizes, with floor division and modulo.

A dimension is a plain ``int`` or a :class:`DimExpr`. ``Symbol("B")`` is the atomic
expression; arithmetic builds the rest (``B*4``, ``S//2``, ``B*S+1``). Every result is
brought to one normal form, so equal expressions compare and hash equal, and an
expression that is a constant comes back as a plain ``int``:

- a polynomial is a sum of terms ``coeff * atom^k * ...``; atoms are symbols and
  ``floordiv(num, den)`` / ``mod(num, den)``;
- dividing by an int ``c > 0`` splits the numerator into ``c*q + r`` with every
  coefficient of ``r`` in ``[0, c)``, then ``(c*q + r) // c = q + r // c`` and
  ``(c*q + r) % c = r % c`` (exact for all integers, so no assumption on the sizes);
  a constant ``r`` folds to ``0`` and ``r`` respectively; a factor common to ``r`` and
  ``c`` cancels (``(2*B)//4`` is ``B//2``);
- a multiple of a quotient is unfolded: ``c*(x//c)`` is ``x - x%c``.

The rules are exact, not complete: two expressions that print differently may still
be equal for every size (then a check is left to run time, see ir/shapes.py).

Example::

    >>> B, S = Symbol("B"), Symbol("S")
    >>> B * 4, (B * 4) // 4, (B * 4) % 4, (B * 4 + 3) // 4
    (B*4, B, 0, B)
    >>> e = (S + 1) // 2 * B
    >>> e, parse_dim(str(e)) == e, evaluate(e, {"B": 3, "S": 6}), sorted(free_symbols(e))
    (B*((S+1)//2), True, 9, ['B', 'S'])
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Union

_SYMBOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Atom: ("sym", name) | ("floordiv", num, den) | ("mod", num, den); num/den are dims.
# Monomial: tuple of (atom, power), sorted by the atoms' keys. Terms: tuple of
# (monomial, coeff), nonzero coeffs, ordered by degree (highest first), then key.


class DimExpr:
    """A symbolic dimension in normal form. Build with :class:`Symbol` and arithmetic."""

    __slots__ = ("_terms", "_key", "_hash")

    def __init__(self, terms):
        self._terms = terms
        self._key = tuple((tuple((_atom_key(a), p) for a, p in mono), c) for mono, c in terms)
        self._hash = hash(self._key)

    # -- identity ---------------------------------------------------------------------------

    def __eq__(self, other) -> bool:
        return isinstance(other, DimExpr) and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        return _from_terms, (self._terms,)

    def __bool__(self) -> bool:
        return True  # a non-constant expression is never the int 0

    # -- arithmetic -------------------------------------------------------------------------

    def __add__(self, other):
        return _add(_terms_of(self), _terms_of(_check(other)))

    __radd__ = __add__

    def __neg__(self):
        return _from_terms(tuple((m, -c) for m, c in self._terms))

    def __sub__(self, other):
        return self + (-_check(other))

    def __rsub__(self, other):
        return (-self) + _check(other)

    def __mul__(self, other):
        return _mul(_terms_of(self), _terms_of(_check(other)))

    __rmul__ = __mul__

    def __floordiv__(self, other):
        return _floordiv(self, _check(other))

    def __rfloordiv__(self, other):
        return _floordiv(_check(other), self)

    def __mod__(self, other):
        return _mod(self, _check(other))

    def __rmod__(self, other):
        return _mod(_check(other), self)

    # -- text -------------------------------------------------------------------------------

    def __str__(self) -> str:
        out = ""
        for mono, coeff in self._terms:
            text = _term_text(mono, coeff)
            out += text if not out or text.startswith("-") else "+" + text
        return out

    __repr__ = __str__


class Symbol(DimExpr):
    """A named dimension whose size is known only at run time (``B``, ``seq``)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        if not isinstance(name, str) or not _SYMBOL_NAME.match(name):
            raise ValueError(f"symbolic dimension name {name!r} must be an identifier")
        self.name = name
        super().__init__(((((("sym", name), 1),), 1),))

    def __reduce__(self):
        return Symbol, (self.name,)

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__


Dim = Union[int, DimExpr]


def is_dim(value) -> bool:
    """An int (not a bool) or a :class:`DimExpr`."""
    return isinstance(value, DimExpr) or isinstance(value, int) and not isinstance(value, bool)


# -- normal form ------------------------------------------------------------------------------


def _check(value) -> Dim:
    if not is_dim(value):
        raise TypeError(f"cannot combine a dimension with {value!r}; dimensions are ints and DimExprs")
    return value


def _terms_of(dim: Dim):
    if isinstance(dim, DimExpr):
        return dim._terms
    return (((), dim),) if dim else ()


def _atom_key(atom):
    if atom[0] == "sym":
        return (0, atom[1])
    return (1 if atom[0] == "floordiv" else 2, _dim_key(atom[1]), _dim_key(atom[2]))


def _dim_key(dim: Dim):
    return dim._key if isinstance(dim, DimExpr) else ((((), dim),))


def _mono_key(mono):
    return (-sum(p for _, p in mono), tuple((_atom_key(a), p) for a, p in mono))


def _from_terms(terms) -> Dim:
    """The canonical dim for a sum of terms (nonzero coefficients, any order)."""
    terms = [(m, c) for m, c in terms if c]
    for i, (mono, coeff) in enumerate(terms):
        for atom, power in mono:
            if atom[0] == "floordiv" and isinstance(atom[2], int) and atom[2] > 0 and coeff % atom[2] == 0:
                return _unfold_floordiv(terms[:i] + terms[i + 1:], mono, coeff, atom)
    terms = tuple(sorted(terms, key=lambda t: _mono_key(t[0])))
    if not terms:
        return 0
    if len(terms) == 1 and terms[0][0] == ():
        return terms[0][1]
    if len(terms) == 1 and terms[0][1] == 1 and len(terms[0][0]) == 1:
        (atom, power), = terms[0][0]
        if atom[0] == "sym" and power == 1:
            return Symbol(atom[1])
    return DimExpr(terms)


def _unfold_floordiv(rest, mono, coeff: int, atom) -> Dim:
    """``k*c*M*(x//c)`` is written ``k*M*x - k*M*(x%c)``: one form for a multiple of a
    quotient, so ``(x//c)*c + x%c`` is ``x`` and a reshape's element counts compare."""
    _, x, c = atom
    powers = dict(mono)
    powers[atom] -= 1
    others = tuple((a, p) for a, p in mono if powers[a])
    others = tuple((a, powers[a]) for a, _ in others)
    scale = _from_terms(((others, coeff // c),))
    return _from_terms(rest) + scale * x - scale * _atom("mod", x, c)


def _add(a, b) -> Dim:
    acc: dict = {}
    for mono, coeff in a + b:
        acc[mono] = acc.get(mono, 0) + coeff
    return _from_terms(acc.items())


def _mul(a, b) -> Dim:
    acc: dict = {}
    for ma, ca in a:
        for mb, cb in b:
            powers = dict(ma)
            for atom, p in mb:
                powers[atom] = powers.get(atom, 0) + p
            mono = tuple(sorted(powers.items(), key=lambda ap: _atom_key(ap[0])))
            acc[mono] = acc.get(mono, 0) + ca * cb
    return _from_terms(acc.items())


def _atom(kind: str, num: Dim, den: Dim) -> DimExpr:
    return DimExpr((((((kind, num, den), 1),), 1),))


def _split(num: Dim, c: int):
    """num = c*q + r with r's coefficients in [0, c): (q, r)."""
    q = _from_terms((m, k // c) for m, k in _terms_of(num))
    r = _from_terms((m, k % c) for m, k in _terms_of(num))
    return q, r


def _common_factor(r: DimExpr, c: int) -> int:
    return math.gcd(c, *(k for _, k in r._terms))


def _scale_down(r: DimExpr, g: int) -> Dim:
    return _from_terms((m, k // g) for m, k in r._terms)


def _exact_quotient(num: Dim, den: DimExpr):
    """num / den when den is one term that divides every term of num exactly, else None."""
    if len(den._terms) != 1:
        return None
    dmono, dcoeff = den._terms[0]
    out = []
    for mono, coeff in _terms_of(num):
        powers = dict(mono)
        for atom, p in dmono:
            if powers.get(atom, 0) < p:
                return None
            powers[atom] -= p
        if coeff % dcoeff:
            return None
        out.append((tuple(sorted(((a, p) for a, p in powers.items() if p), key=lambda ap: _atom_key(ap[0]))),
                    coeff // dcoeff))
    return _from_terms(out)


def _floordiv(num: Dim, den: Dim) -> Dim:
    if isinstance(den, int):
        if den == 0:
            raise ZeroDivisionError(f"dimension {num} divided by 0")
        if isinstance(num, int):
            return num // den
        if den < 0:
            return _atom("floordiv", num, den)
        q, r = _split(num, den)
        if isinstance(r, int):
            return q + r // den
        g = _common_factor(r, den)  # (2*B)//4 is B//2
        return q + _atom("floordiv", _scale_down(r, g), den // g)
    if num == den:
        return 1
    exact = _exact_quotient(num, den)
    return exact if exact is not None else _atom("floordiv", num, den)


def _mod(num: Dim, den: Dim) -> Dim:
    if isinstance(den, int):
        if den == 0:
            raise ZeroDivisionError(f"dimension {num} modulo 0")
        if isinstance(num, int):
            return num % den
        if den < 0:
            return _atom("mod", num, den)
        _, r = _split(num, den)
        if isinstance(r, int):
            return r % den
        g = _common_factor(r, den)  # (2*B)%4 is (B%2)*2
        return g * _atom("mod", _scale_down(r, g), den // g)
    if num == den or _exact_quotient(num, den) is not None:
        return 0
    return _atom("mod", num, den)


# -- text ----------------------------------------------------------------------------------------


def _operand_text(dim: Dim) -> str:
    """A division's operand: bare if it is a name or a non-negative int, else parenthesized."""
    if isinstance(dim, Symbol) or isinstance(dim, int) and dim >= 0:
        return str(dim)
    return f"({dim})"


def _atom_text(atom, alone: bool) -> str:
    if atom[0] == "sym":
        return atom[1]
    text = f"{_operand_text(atom[1])}{'//' if atom[0] == 'floordiv' else '%'}{_operand_text(atom[2])}"
    return text if alone else f"({text})"


def _term_text(mono, coeff: int) -> str:
    if not mono:
        return str(coeff)
    factors = [a for a, p in mono for _ in range(p)]
    alone = len(factors) == 1 and coeff == 1
    body = "*".join(_atom_text(a, alone) for a in factors)
    if coeff == 1:
        return body
    if coeff == -1:
        return "-" + body
    return f"{'-' if coeff < 0 else ''}{body}*{abs(coeff)}"


# -- evaluation ----------------------------------------------------------------------------------


def substitute(dim: Dim, sizes: Mapping[str, Dim]) -> Dim:
    """``dim`` with each symbol named in ``sizes`` replaced (by an int or another dim)."""
    if isinstance(dim, int):
        return dim
    if isinstance(dim, Symbol):
        return sizes.get(dim.name, dim)
    total: Dim = 0
    for mono, coeff in dim._terms:
        term: Dim = coeff
        for atom, power in mono:
            if atom[0] == "sym":
                value = sizes.get(atom[1], Symbol(atom[1]))
            else:
                num, den = substitute(atom[1], sizes), substitute(atom[2], sizes)
                value = num // den if atom[0] == "floordiv" else num % den
            for _ in range(power):
                term = term * value
        total = total + term
    return total


def evaluate(dim: Dim, sizes: Mapping[str, int]) -> int:
    """The size of ``dim`` given every symbol's size; KeyError names a missing symbol."""
    value = substitute(dim, sizes)
    if not isinstance(value, int):
        missing = sorted(free_symbols(value))
        raise KeyError(f"dimension {dim} needs a size for {', '.join(missing)}")
    return value


def monomials(dim: Dim) -> list[tuple[int, tuple[tuple[DimExpr, int], ...]]]:
    """``dim`` as a sum of ``coeff * factor**power * ...``: ``[(coeff, ((factor, power), ...))]``,
    each factor a :class:`Symbol` or one quotient or remainder (``S//2``); an int is one
    term without factors.

    >>> S = Symbol("S")
    >>> [(c, [(str(f), p) for f, p in fs]) for c, fs in monomials(S * S * 2 - S // 2 + 3)]
    [(2, [('S', 2)]), (-1, [('S//2', 1)]), (3, [])]
    """
    if isinstance(dim, int):
        return [(dim, ())] if dim else []
    return [(coeff, tuple((Symbol(atom[1]) if atom[0] == "sym" else DimExpr((((((atom, 1),), 1),))), power)
                          for atom, power in mono))
            for mono, coeff in dim._terms]


def free_symbols(dim: Dim) -> frozenset[str]:
    """Names of the symbols ``dim`` depends on."""
    if isinstance(dim, int):
        return frozenset()
    if isinstance(dim, Symbol):
        return frozenset((dim.name,))
    names: set[str] = set()
    for mono, _ in dim._terms:
        for atom, _ in mono:
            if atom[0] == "sym":
                names.add(atom[1])
            else:
                names |= free_symbols(atom[1]) | free_symbols(atom[2])
    return frozenset(names)


def linear_in(dim: Dim, name: str):
    """(a, b) with ``dim == a*name + b``, ints, when ``dim`` is linear in ``name`` alone; else None."""
    a = b = 0
    for mono, coeff in _terms_of(dim):
        if mono == ():
            b = coeff
        elif mono == ((("sym", name), 1),):
            a = coeff
        else:
            return None
    return (a, b) if a else None


# -- parsing -------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*%()]))")


def parse_dim(text: str) -> Dim:
    """Read a dimension as printed (``B*4``, ``(S+1)//2``, ``-(S%2)+B``); ValueError if malformed."""
    tokens = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"unexpected {text[pos:].strip()[:1]!r} in dimension {text!r}")
        number, name, punct = m.groups()
        tokens.append(int(number) if number else ("name", name) if name else punct)
        pos = m.end()
    reader = _Reader(tokens, text)
    dim = reader.sum()
    if reader.i != len(tokens):
        raise ValueError(f"unexpected {reader.peek()!r} in dimension {text!r}")
    return dim


class _Reader:
    """Recursive descent with Python's precedence: + - below * // %, below unary minus."""

    def __init__(self, tokens, text):
        self.tokens, self.text, self.i = tokens, text, 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self):
        token = self.peek()
        if token is None:
            raise ValueError(f"dimension {self.text!r} ends too early")
        self.i += 1
        return token

    def sum(self) -> Dim:
        value = self.product()
        while self.peek() in ("+", "-"):
            value = value + self.product() if self.take() == "+" else value - self.product()
        return value

    def product(self) -> Dim:
        value = self.unary()
        while self.peek() in ("*", "//", "%"):
            op, rhs = self.take(), self.unary()
            value = value * rhs if op == "*" else value // rhs if op == "//" else value % rhs
        return value

    def unary(self) -> Dim:
        if self.peek() == "-":
            self.take()
            return -self.unary()
        token = self.take()
        if isinstance(token, int):
            return token
        if isinstance(token, tuple):
            return Symbol(token[1])
        if token == "(":
            value = self.sum()
            if self.take() != ")":
                raise ValueError(f"missing ')' in dimension {self.text!r}")
            return value
        raise ValueError(f"unexpected {token!r} in dimension {self.text!r}")
