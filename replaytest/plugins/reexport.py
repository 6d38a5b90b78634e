"""Names loaded on first use from the module that defines them: what the short public modules
(``replaytest.dbos``, ``replaytest.temporal``, …) and the deprecated old paths of moved names
(``replaytest.plugins.dbos_replay``, …) hand out through a module-level ``__getattr__``.

Loading on first use matters: some of the modules named here act when imported (``plugins.dbos.prompts``
starts recording prompt versions, ``plugins.langgraph.prompts`` registers its recorder), and a user who
takes only a replay configuration from the short module must not set those off.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(module: str, sources: Mapping[str, str], moved_to: str | None = None) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``module``: each name in ``sources`` is taken from the module ``sources`` gives
    for it, imported then. With ``moved_to`` (the path users should import from now) every access warns
    with a ``DeprecationWarning`` naming it."""

    def __getattr__(name: str) -> Any:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        if moved_to is not None:
            warnings.warn(
                f"{module}.{name} moved: import it from {moved_to} (the old path {module} goes in the next release)",
                DeprecationWarning,
                stacklevel=2,
            )
        return getattr(importlib.import_module(source), name)

    return __getattr__
