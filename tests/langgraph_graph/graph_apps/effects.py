"""The effects log every node body of the test graphs appends to (a real file the tests point at a
temporary path), so a test can tell whether a node body ran."""

from __future__ import annotations

from pathlib import Path

EFFECTS: Path | None = None


def effect(line: str) -> None:
    if EFFECTS is not None:
        with EFFECTS.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
