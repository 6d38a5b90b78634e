"""Node positions from libcst's code generation: the one place replaytest uses libcst's private names.

libcst's public way to know where a node is, ``MetadataWrapper`` with ``PositionProvider``, computes a
position for every node of the module; the linter needs a handful (effects, call sites). So the
collector generates the module's code once with a code-generation state (``libcst._nodes.internal
.CodegenState``, driven by the private ``Module._codegen``) that brings line and column up to date only
at the wanted nodes. Those two names are private and may change in any libcst release: pyproject bounds
libcst to the versions tested, the oldest in ``.ci/compat-matrix``, and tests/lint/test_cst_positions.py
compares the result with ``PositionProvider``'s on the same code.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState

# ((start line, start column), (end line, end column)); lines from 1, columns from 0.
NodeSpan = tuple[tuple[int, int], tuple[int, int]]


class _NoRecord:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_RECORD = _NoRecord()


class _SpanState(CodegenState):
    """Code generation that records positions of the wanted nodes only.

    Tokens are appended as usual (the cheap part); line and column are brought up to date only when a
    wanted node starts or ends, by scanning the tokens added since the last update, so the cost over a
    plain code generation is proportional to the text, not to the number of tokens.
    """

    def __init__(self, module: cst.Module, wanted: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.wanted = wanted
        self.line = 1
        self.column = 0
        self.consumed = 0
        self.spans: dict[int, NodeSpan] = {}

    def _catch_up(self) -> tuple[int, int]:
        if self.consumed < len(self.tokens):
            text = "".join(self.tokens[self.consumed:])
            self.consumed = len(self.tokens)
            newlines = text.count("\n") + text.count("\r") - text.count("\r\n")
            if newlines:
                self.line += newlines
                self.column = len(text) - max(text.rfind("\n"), text.rfind("\r")) - 1
            else:
                self.column += len(text)
        return self.line, self.column

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: Any = None, end_node: Any = None) -> Any:
        if id(node) not in self.wanted:
            return _NO_RECORD
        return self._record(node)

    @contextmanager
    def _record(self, node: cst.CSTNode) -> Iterator[None]:
        start = self._catch_up()
        yield
        self.spans[id(node)] = (start, self._catch_up())


def node_spans(tree: cst.Module, wanted: set[int]) -> dict[int, NodeSpan]:
    """``{id(node): ((start line, start column), (end line, end column))}`` for the nodes of ``tree`` whose
    ``id`` is in ``wanted``, computed in one code generation instead of one metadata pass over every node.
    For expressions (all the linter asks for) these are the positions of libcst's public
    ``PositionProvider`` (lines from 1, columns from 0); compound statements, whose positions libcst
    hoists from their children, keep their raw extent here."""
    state = _SpanState(tree, wanted)
    tree._codegen(state)
    return state.spans
