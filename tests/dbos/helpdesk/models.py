"""What the triage step decides (pickled by DBOS; the workflow module imports it, so replay rebuilds it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Triage:
    queue: str
    priority: int
