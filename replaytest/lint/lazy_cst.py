"""libcst, imported when first used: the structural rules name libcst node types in their hooks, but a
run that parses nothing (every summary cached) must not pay libcst's import (about 0.2 s, most of a warm
run). The first attribute read imports libcst and copies its names here, so later reads are ordinary
module-attribute lookups.

Use as ``from replaytest.lint import lazy_cst as cst`` (under ``TYPE_CHECKING``, ``import libcst as cst``).
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    import libcst

    globals().update({key: value for key, value in vars(libcst).items() if not key.startswith("__")})
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module 'libcst' has no attribute {name!r}") from None
