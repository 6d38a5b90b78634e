"""The static analyzer: ``replaytest lint``.

Entry point for programs: ``lint_paths`` (see ``replaytest.lint.engine``). It is imported lazily so
that importing ``replaytest.lint.profile`` (as every framework plugin does) stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["lint_paths"]


def __getattr__(name: str) -> Any:
    if name == "lint_paths":
        from replaytest.lint.engine import lint_paths

        return lint_paths
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
