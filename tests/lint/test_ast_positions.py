"""The linter's positions come from CPython's ``ast`` (byte columns turned into characters by
``syntax.SourceText``), while ``fix`` finds the calls to rewrite by libcst's ``PositionProvider``: the two must
agree exactly, or a fix would not find its call.

For modules that exercise the tricky parts (CRLF and CR newlines, tabs, multi-line strings and brackets,
line continuations, decorators, comments, non-ASCII text, f-strings, no trailing newline), every call,
attribute and subscript has the same range in both, and every name ``ast`` knows is one libcst places the
same way (libcst has more ``Name`` nodes: an attribute's name, a keyword, a parameter). They run against
the oldest supported libcst too (``.ci/compat-matrix``).
"""

from __future__ import annotations

import ast
from collections import Counter

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from replaytest.lint.summarise import decode_source
from replaytest.lint.syntax import SourceText

SOURCES = {
    "plain": (
        "import time\n\n\nasync def run(x: int) -> int:\n    t = time.time()\n    return x + int(t)\n"
    ),
    "crlf": "def f():\r\n    a = 1\r\n    return g(a,\r\n             2)\r\n",
    "cr": "x = 1\ry = f(x)\rz = [\r    x,\r    y,\r]\r",
    "tabs_and_continuation": "if x:\n\ty = a + \\\n\t    b\n\tz = [\n\t\t1,\n\t\t2,\n\t]\n",
    "strings": (
        's = """first\nsecond\n"""\nt = f"{s!r:>10}" \'é\'\n'
        "@decorator(\n    'ü',  # a comment\n)\nclass C:\n    '''doc'''\n    def m(self): return s\n"
    ),
    "non_ascii_before_calls": "naïve = '«x»'\nrésumé = lookup('ü').get(key='é')[0]\nprint(f'{naïve}', os.environ['ä'])\n",
    "parenthesised": "x = (f)(1)\ny = (a.b).c(2)\nz = (\n    g(3)\n)\n",
    "no_trailing_newline": "value = call(1)",
}
_TYPES = {ast.Call: cst.Call, ast.Attribute: cst.Attribute, ast.Subscript: cst.Subscript, ast.Name: cst.Name}


def _cst_spans(source: str) -> Counter[tuple[str, tuple[tuple[int, int], tuple[int, int]]]]:
    wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
    spans: Counter[tuple[str, tuple[tuple[int, int], tuple[int, int]]]] = Counter()
    for node, where in wrapper.resolve(PositionProvider).items():
        for ast_type, cst_type in _TYPES.items():
            if type(node) is cst_type:
                spans[ast_type.__name__, ((where.start.line, where.start.column), (where.end.line, where.end.column))] += 1
    return spans


def _ast_spans(source: str) -> Counter[tuple[str, tuple[tuple[int, int], tuple[int, int]]]]:
    data = source.encode("utf-8")
    text = SourceText(decode_source(data))
    spans: Counter[tuple[str, tuple[tuple[int, int], tuple[int, int]]]] = Counter()
    for node in ast.walk(ast.parse(data)):
        if type(node) in _TYPES:
            spans[type(node).__name__, text.span(node)] += 1
    return spans


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_calls_attributes_subscripts_and_names_are_where_libcst_puts_them(name: str) -> None:
    expected, got = _cst_spans(SOURCES[name]), _ast_spans(SOURCES[name])
    assert sum(got.values()) >= 3  # the comparison covers several nodes, not an empty map
    for kind in ("Call", "Attribute", "Subscript"):
        assert {k: n for k, n in got.items() if k[0] == kind} == {k: n for k, n in expected.items() if k[0] == kind}
    names = {k: n for k, n in got.items() if k[0] == "Name"}
    assert all(expected[key] >= count for key, count in names.items()), (names, expected)


def test_a_node_s_code_is_its_exact_source() -> None:
    source = "résumé = lookup('ü',\r\n    key = 'é')  # c\r\n"
    text = SourceText(decode_source(source.encode()))
    call = ast.parse(source).body[0].value  # type: ignore[attr-defined]
    assert text.code(call) == "lookup('ü',\r\n    key = 'é')"
    assert text.span(call) == ((1, 9), (2, 14))


def test_a_coding_cookie_is_honoured() -> None:
    data = "# -*- coding: latin-1 -*-\nx = f('é')\n".encode("latin-1")
    text = SourceText(decode_source(data))
    call = ast.parse(data).body[0].value  # type: ignore[attr-defined]
    assert text.code(call) == "f('é')"
    assert text.span(call) == ((2, 4), (2, 10))
