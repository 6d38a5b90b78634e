"""The README's table of supported library versions, pyproject.toml and the compatibility matrix agree:
every range in the table is the one pyproject requires (in the dependencies or an extra, and in the test
extra), and the oldest version each range admits is the one ``.ci/compat-matrix`` tests."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| [^|]+ \| `(?P<name>[A-Za-z0-9_.-]+)>=(?P<low>[0-9.]+),<(?P<high>[0-9.]+)` \|", re.M)


def _table() -> dict[str, tuple[str, str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Supported versions", 1)[1].split("\n#", 1)[0]
    return {m["name"]: (m["low"], m["high"]) for m in ROW.finditer(section)}


def _requirements(table: dict[str, list[str]] | list[str]) -> list[str]:
    if isinstance(table, dict):
        return [req for reqs in table.values() for req in reqs]
    return list(table)


def test_table_ranges_are_pyprojects() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    everywhere = _requirements(project["dependencies"]) + _requirements(project["optional-dependencies"])
    table = _table()
    assert {"libcst", "temporalio", "dbos", "langgraph", "pytest"} <= set(table)

    for name, (low, high) in table.items():
        wanted = f"{name}>={low},<{high}"
        found = [req.split(";")[0].strip() for req in everywhere if re.match(rf"{re.escape(name)}\b[<>=!~ ]", req)]
        assert found and set(found) == {wanted}, (name, found)
        # An environment marker (the AWS durable SDK needs Python 3.11) is not part of the range.
        test_extra = [r.split(";")[0].strip() for r in project["optional-dependencies"]["test"] if r.startswith(name + ">")]
        if name not in {req.split(">")[0] for req in project["dependencies"]}:
            assert test_extra == [wanted], (name, test_extra)


def test_compat_matrix_tests_each_oldest_version() -> None:
    matrix = (ROOT / ".ci" / "compat-matrix").read_text(encoding="utf-8")
    pins = dict(re.findall(r"([A-Za-z0-9_.-]+)==([0-9.]+)", matrix))
    for name in ("libcst", "temporalio", "dbos", "langgraph", "pytest", "aws-durable-execution-sdk-python"):
        low = _table()[name][0]
        assert name in pins, f"{name}: no oldest-version line in .ci/compat-matrix"
        assert pins[name].split(".")[: len(low.split("."))] == low.split("."), (name, pins[name], low)
