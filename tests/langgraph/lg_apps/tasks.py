"""The order agent's @task functions. Each body appends a line to ``EFFECTS`` (a real file the tests
point at a temporary path), so a test can tell whether a task body ran."""

from __future__ import annotations

from pathlib import Path

from langgraph.func import task

EFFECTS: Path | None = None
PRICES = {"lamp": 40.0, "desk": 250.0}


def _effect(line: str) -> None:
    if EFFECTS is not None:
        with EFFECTS.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


@task
def fetch_price(item: str) -> float:
    _effect(f"fetch_price {item}")
    return PRICES.get(item, 10.0)


@task
def draft(part: str, item: str) -> str:
    _effect(f"draft {part} {item}")
    return f"{part} about the {item}"


@task
def notify(summary: str) -> dict:
    _effect(f"notify {summary}")
    return {"sent": True, "summary": summary}


@task
def check_stock(item: str) -> bool:
    _effect(f"check_stock {item}")
    return True


@task
def compose(part: str, item: str) -> str:
    _effect(f"compose {part} {item}")
    return f"{part} about the {item}"
