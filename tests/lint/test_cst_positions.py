"""The linter's positions come from libcst's private code-generation API (replaytest/lint/cst_positions.py).

These tests pin that module to libcst's public answer: for every node of modules that exercise the
tricky parts of code generation (CRLF and CR newlines, tabs, multi-line strings and brackets, line
continuations, decorators, comments, non-ASCII text), ``node_spans`` must give exactly the range
``PositionProvider`` gives to every expression (the linter asks for expressions only: calls, their
arguments, keys; libcst hoists compound statements' positions from their children, which the private
state does not reproduce). They run against the oldest supported libcst too (``.ci/compat-matrix``),
so a libcst release that changes the private names fails here, not in a user's lint run.
"""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from replaytest.lint.cst_positions import node_spans

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
    "no_trailing_newline": "value = call(1)",
}


def _public_spans(module: cst.Module) -> dict[int, tuple[tuple[int, int], tuple[int, int]]]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    return {
        id(node): ((r.start.line, r.start.column), (r.end.line, r.end.column))
        for node, r in positions.items()
        if isinstance(node, cst.BaseExpression)
    }


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_expression_matches_position_provider(name: str) -> None:
    module = cst.parse_module(SOURCES[name])
    expected = _public_spans(module)
    assert len(expected) >= 4  # the comparison covers several nodes, not an empty map

    got = node_spans(module, set(expected))

    assert got == expected


def test_only_wanted_nodes_are_recorded() -> None:
    module = cst.parse_module(SOURCES["plain"])
    calls = [node for node in _all_nodes(module) if isinstance(node, cst.Call)]
    assert len(calls) == 2

    got = node_spans(module, {id(calls[1])})

    assert got == {id(calls[1]): ((6, 15), (6, 21))}  # int(t) on line 6


def test_generated_code_is_unchanged() -> None:
    # The state only records positions: the module's code generation must still give the source back.
    module = cst.parse_module(SOURCES["strings"])
    node_spans(module, {id(module)})
    assert module.code == SOURCES["strings"]


def _all_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    found = [node]
    for child in node.children:
        found.extend(_all_nodes(child))
    return found
