"""Finding the class a recorded value names among the modules the current code has already imported.

Histories come from production databases and other people's machines, so a class name in a history is
data, never an instruction: replay does not import a module because a history names it (importing runs
the module's top-level code). ``imported_attribute`` looks the name up in ``sys.modules`` only — the
modules the workflow's own code (and what it imports) has loaded by the time replay rebuilds values —
and reads the module's namespace directly, so a module-level ``__getattr__`` (lazy loading) cannot
import anything either. DBOS typed JSON (``dbos.values``) and LangGraph checkpoint values
(``langgraph.values``) both rebuild through it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

_MISSING = object()


@dataclass(frozen=True)
class ImportedName:
    """Where a dotted name points in the imported modules: the module found, and the object the rest
    of the name reaches in it (``None`` when the module has no such attribute)."""

    module_name: str
    qualname: str
    value: Any


def imported_attribute(dotted_name: str) -> ImportedName | None:
    """``module.Qual.Name`` resolved against already imported modules (the longest module prefix in
    ``sys.modules`` wins, for nested classes); ``None`` when no prefix is an imported module, or when
    the longest one is a package without the next name (an unimported submodule)."""
    parts = dotted_name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name, attributes = ".".join(parts[:split]), parts[split:]
        module = sys.modules.get(module_name)
        if module is None:
            continue
        value: Any = vars(module).get(attributes[0], _MISSING)
        if value is _MISSING and len(attributes) > 1:
            return None  # the name goes on into a submodule of the package that nobody has imported
        for attribute in attributes[1:]:
            if value is _MISSING:
                break
            value = getattr(value, attribute, _MISSING)
        return ImportedName(module_name, ".".join(attributes), None if value is _MISSING else value)
    return None
