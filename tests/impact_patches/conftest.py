"""Patch retirement tests: the workflow modules beside them are imported by their own name (the
Temporal sandbox re-imports a workflow's module by name when it runs it)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# tests/temporal: the dev server helper (``temporal_devserver``) the Temporal retirement test reuses.
for folder in (HERE, HERE.parent / "temporal"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
