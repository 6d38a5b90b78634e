"""Fixtures of the corpus tests: the triage agent's modules next to the tests import by their own name
(``triage_agent``), as the recorded histories' workflow code does in the projects the tests build."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
