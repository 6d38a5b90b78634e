"""Patch retirement tests: the workflow modules beside them are imported by their own name (the
Temporal sandbox re-imports a workflow's module by name when it runs it)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
