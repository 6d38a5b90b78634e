"""README's differential matrix (engine × change kind, under "Before you deploy") makes no claim without a test:
every cell is "n/a — why", "not covered yet", or names tests of that engine's differential suite — a quoted name
is a row (parameter) of one of the suite's parametrized tests, a bare name a test function of the suite — and
each named test exists, so renaming or deleting a row breaks this test."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
HEADER = "| change | Temporal | DBOS | journal | LangGraph functional | StateGraph | AWS durable |"
SUITES = {
    "Temporal": "tests/impact_e2e/test_impact_e2e_differential_temporal.py",
    "DBOS": "tests/impact_e2e/test_impact_e2e_differential_dbos.py",
    "journal": "tests/impact/test_impact_rehearsal_journal.py",
    "LangGraph functional": "tests/impact_e2e/test_impact_e2e_differential_langgraph.py",
    "StateGraph": "tests/impact_e2e/test_impact_e2e_differential_stategraph.py",
    "AWS durable": "tests/impact_e2e/test_impact_e2e_differential_aws.py",
}
CHANGE_KINDS = (
    "step inserted before the wait", "step inserted after the wait", "step renamed", "two steps swapped",
    "branch condition changed", "timer added", "timer changed", "child workflow added",
    "guard negated (`if not patched(...)`)",
)
NAMED = re.compile(r'`("[^"`]+"|\w+)`')


def matrix(text: str) -> dict[str, dict[str, str]]:
    """{change kind: {engine: cell}} from the table under HEADER."""
    lines = text[text.index(HEADER):].splitlines()
    engines = [cell.strip() for cell in lines[0].strip().strip("|").split("|")][1:]
    rows: dict[str, dict[str, str]] = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == len(engines) + 1, f"a row of {len(cells)} cells: {line}"
        rows[cells[0]] = dict(zip(engines, cells[1:]))
    return rows


def suite_tests(path: Path) -> tuple[set[str], set[str]]:
    """(the test functions of ``path``, the parameters of its tests parametrized over a module-level dict or list
    of names — dict keys or list items, string literals or module-level string constants)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants: dict[str, str] = {}
    collections: dict[str, list[ast.expr]] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                constants[target.id] = value.value
            elif isinstance(value, ast.Dict):
                collections[target.id] = [key for key in value.keys if key is not None]
            elif isinstance(value, ast.List):
                collections[target.id] = list(value.elts)

    def text_of(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return constants.get(node.id) if isinstance(node, ast.Name) else None

    functions, parameters = set(), set()
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
            continue
        functions.add(node.name)
        for decorator in node.decorator_list:
            if not (isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "parametrize"):
                continue
            values = decorator.args[1]
            if isinstance(values, ast.Call) and values.args:  # list(CHANGES)
                values = values.args[0]
            if isinstance(values, ast.Name):
                parameters.update(name for name in map(text_of, collections.get(values.id, [])) if name is not None)
    return functions, parameters


def test_the_matrix_has_a_cell_for_each_engine_and_change_kind() -> None:
    rows = matrix(README.read_text(encoding="utf-8"))
    assert tuple(rows) == CHANGE_KINDS
    for change, cells in rows.items():
        assert tuple(cells) == tuple(SUITES), change


def test_every_cell_names_existing_tests_or_says_why_not() -> None:
    rows = matrix(README.read_text(encoding="utf-8"))
    suites = {engine: suite_tests(ROOT / path) for engine, path in SUITES.items()}
    for change, cells in rows.items():
        for engine, cell in cells.items():
            if cell == "not covered yet" or re.fullmatch(r"n/a — \S.*", cell):
                continue
            functions, parameters = suites[engine]
            named = NAMED.findall(cell)
            assert named and NAMED.sub("", cell).strip(" ,;") == "", f"{engine} × {change}: {cell!r}"
            for name in named:
                if name.startswith('"'):
                    assert name.strip('"') in parameters, f"{engine} × {change}: no row {name} in {SUITES[engine]}"
                else:
                    assert name in functions, f"{engine} × {change}: no test {name} in {SUITES[engine]}"


def test_the_suite_reader_finds_rows_and_functions() -> None:
    """The control: the reader sees the rows and functions the suites have, and not a name they lack."""
    functions, parameters = suite_tests(ROOT / SUITES["LangGraph functional"])
    assert "nested graph call added after the interrupt" in parameters  # a key named by a module constant
    assert "task renamed" in parameters and "step renamed" not in parameters
    assert "test_impact_predicts_each_parked_thread_as_langgraph_resumes_it" in functions
    functions, parameters = suite_tests(ROOT / SUITES["DBOS"])
    assert "timer added after the recv" in parameters  # a list of names
    assert "test_a_changed_sleep_keeps_the_sleeping_runs_wake_up_time_as_dbos_recovery_does" in functions
