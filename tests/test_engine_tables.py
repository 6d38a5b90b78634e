"""The tables of docs/engines.md ("What each engine's API replays") make no claim without a test: every
row is "replayed", "replayed, compared partly (…)", "refused per history (…)" or "not yet checked", every
row but the last kind names at least one test, and every named test (``tests/…py::name``, with an optional
``[parameter]``) is a function of that file, so renaming or deleting a test breaks this one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINES_DOC = ROOT / "docs" / "engines.md"
SECTION = "## What each engine's API replays"
# LangGraph has two tables: its functional API's (@entrypoint, @task) and its graph API's (StateGraph).
ENGINES = (
    "Temporal", "DBOS", "Restate", "Azure Durable Functions", "The journal runtime",
    "LangGraph functional API", "LangGraph graph API", "AWS Lambda durable functions",
)
VERDICT = re.compile(r"^(replayed|replayed, compared partly \(.+\)|refused per history \(.+\)|not yet checked)( \(.+\))?$")
NODE_ID = re.compile(r"`(tests/[\w/]+\.py)::(\w+)(?:::(\w+))?(?:\[[^\]`]+\])?`")


def engine_tables(text: str) -> dict[str, list[tuple[str, str, str]]]:
    """(construct, verdict, tests cell) of each row, by engine heading, from the section's tables."""
    start = text.index(SECTION) + len(SECTION)
    end = text.find("\n## ", start)
    tables: dict[str, list[tuple[str, str, str]]] = {}
    engine = None
    for line in text[start : end if end != -1 else len(text)].splitlines():
        if line.startswith("### "):
            engine = line[4:].strip()
            tables[engine] = []
        elif line.startswith("|") and engine is not None:
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if cells[0] in ("Construct", "---") or set(cells[0]) <= {"-"}:
                continue
            assert len(cells) == 3, f"{engine}: a row of {len(cells)} cells: {line}"
            tables[engine].append((cells[0], cells[1], cells[2]))
    return tables


def defined(path: Path, name: str, method: str | None) -> bool:
    """Whether ``path`` defines test function ``name`` (or method ``method`` of class ``name``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if method is None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return True
        if method is not None and isinstance(node, ast.ClassDef) and node.name == name:
            return any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method for item in node.body)
    return False


def problems(text: str, root: Path) -> list[str]:
    """Everything wrong with the tables of ``text``, tests resolved under ``root``."""
    found = []
    tables = engine_tables(text)
    for engine in ENGINES:
        if not tables.get(engine):
            found.append(f"no table for {engine}")
    for engine, rows in tables.items():
        for construct, verdict, tests in rows:
            where = f"{engine}, {construct}"
            if not VERDICT.match(verdict):
                found.append(f"{where}: verdict {verdict!r} is none of the four")
            named = NODE_ID.findall(tests)
            if verdict == "not yet checked":
                if tests != "—":
                    found.append(f"{where}: not yet checked, yet names {tests!r}")
                continue
            if not named:
                found.append(f"{where}: {verdict!r} names no test")
            for file, name, method in named:
                path = root / file
                if not path.is_file():
                    found.append(f"{where}: {file} does not exist")
                elif not defined(path, name, method or None):
                    found.append(f"{where}: {file} has no test {name}{'::' + method if method else ''}")
    return found


def test_every_row_of_every_engine_table_names_a_test_that_exists() -> None:
    assert problems(ENGINES_DOC.read_text(encoding="utf-8"), ROOT) == []


def test_the_tables_name_real_tests_of_each_engine() -> None:
    tables = engine_tables(ENGINES_DOC.read_text(encoding="utf-8"))
    assert set(ENGINES) <= set(tables)
    for engine in ENGINES:
        assert any(verdict != "not yet checked" for _, verdict, _ in tables[engine]), engine


BROKEN = f"""{SECTION}

### Temporal

| Construct | Replay | Test |
|---|---|---|
| a | replayed | `tests/test_engine_tables.py::test_that_was_renamed` |
| b | replayed | `tests/no_such_file.py::test_x` |
| c | replayed | none |
| d | replayed mostly | `tests/test_engine_tables.py::test_every_row_of_every_engine_table_names_a_test_that_exists` |
| e | not yet checked | `tests/test_engine_tables.py::test_every_row_of_every_engine_table_names_a_test_that_exists` |
"""


@pytest.mark.parametrize(
    "said",
    [
        "Temporal, a: tests/test_engine_tables.py has no test test_that_was_renamed",
        "Temporal, b: tests/no_such_file.py does not exist",
        "Temporal, c: 'replayed' names no test",
        "Temporal, d: verdict 'replayed mostly' is none of the four",
        "Temporal, e: not yet checked, yet names",
        "no table for DBOS",
    ],
)
def test_a_table_naming_a_missing_test_or_no_test_is_caught(said: str) -> None:
    assert any(said in problem for problem in problems(BROKEN, ROOT)), problems(BROKEN, ROOT)


def test_a_parametrized_test_resolves_by_its_function() -> None:
    text = f"""{SECTION}

### Temporal

| Construct | Replay | Test |
|---|---|---|
| a | replayed | `tests/test_engine_tables.py::test_a_table_naming_a_missing_test_or_no_test_is_caught[x]` |
"""
    assert [p for p in problems(text, ROOT) if p.startswith("Temporal")] == []
