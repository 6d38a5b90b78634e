"""An import whose top-level name is both a folder of the project and an installed distribution is the
distribution's (Python prefers a regular package on ``sys.path`` to a same-named namespace folder), so
no "cannot resolve project module" note; a project-looking name that nothing provides is named for
what it is: neither held by a source root nor installed.

The projects are small agents written here; the expected notes are written out by hand.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from lintkit import run_replaytest, write_files
from test_import_roots import lint

# A warehouse agent: its own `packaging` folder holds box sizes, while the fulfilment workflow compares
# the model version with the `packaging` distribution (installed in the test environment: pytest needs it).
WAREHOUSE = {
    "pyproject.toml": "[tool.replaytest]\n",
    "warehouse/packaging/box_sizes.py": """
        BOXES = {"small": (20, 15, 10), "large": (60, 40, 40)}
        """,
    "warehouse/flows/fulfil.py": """
        from temporalio import workflow
        from packaging.version import Version
        from packaging import specifiers

        from warehouse.packaging.box_sizes import BOXES


        @workflow.defn
        class Fulfil:
            @workflow.run
            async def run(self, model_version: str, box: str) -> bool:
                fits = box in BOXES
                return fits and Version(model_version) in specifiers.SpecifierSet(">=2")
        """,
}

# A research sample laid out like Temporal's OpenAI Agents samples: a folder of agent definitions called
# `agents` next to the workflows, which import `agents` meaning the OpenAI Agents SDK (not installed here).
RESEARCH = {
    "pyproject.toml": "[tool.replaytest]\n",
    "samples/research/agents/planner_agent.py": """
        from agents import Agent

        planner = Agent(name="planner", instructions="Plan three web searches for the question.")
        """,
    "samples/research/workflows/research.py": """
        from temporalio import workflow
        from agents import Runner


        @workflow.defn
        class Research:
            @workflow.run
            async def run(self, question: str) -> str:
                result = await Runner.run(question)
                return str(result)
        """,
}


def test_a_project_folder_named_like_an_installed_distribution_is_not_a_project_module(tmp_path: Path) -> None:
    assert importlib.metadata.distribution("packaging").metadata["Name"] == "packaging"
    write_files(tmp_path, WAREHOUSE)
    result = lint(tmp_path)
    assert result.diagnostics == []
    assert result.notes == []
    run = run_replaytest("lint", "--no-cache", ".", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert "cannot resolve" not in run.stderr, run.stderr
    assert "All checks passed (2 files checked)." in run.stdout, run.describe()


def test_a_name_neither_installed_nor_held_by_a_source_root_says_so(tmp_path: Path) -> None:
    assert importlib.util.find_spec("agents") is None  # the precondition: the SDK is not installed here
    write_files(tmp_path, RESEARCH)
    expected = (
        "note: cannot resolve module 'agents.Runner' (imported by samples/research/workflows/research.py): "
        "no source root holds it and no installed distribution provides 'agents'; calls into it are not "
        "followed. If it is a third-party package, install it where replaytest runs; if it is the project's, "
        "add its folder to `src` in [tool.replaytest]."
    )
    assert lint(tmp_path).notes == [expected]
    run = run_replaytest("lint", "--no-cache", ".", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert run.stderr.count("note: cannot resolve") == 1, run.stderr
    assert expected in run.stderr, run.stderr
    assert "project module" not in run.stderr, run.stderr


def test_a_regular_project_package_of_that_name_stays_the_projects(tmp_path: Path) -> None:
    # `packaging/__init__.py` at the project root is what `import packaging` runs from here, installed
    # distribution or not, and it has no `version` or `specifiers` submodule: the project's own missing modules.
    files = {name: text for name, text in WAREHOUSE.items() if not name.startswith("warehouse/packaging/")}
    files["warehouse/__init__.py"] = ""
    files["packaging/__init__.py"] = '"""Box sizes of the warehouse."""\n\nBOXES = {"small": (20, 15, 10)}\n'
    files["warehouse/flows/fulfil.py"] = files["warehouse/flows/fulfil.py"].replace(
        "from warehouse.packaging.box_sizes import BOXES", "from packaging import BOXES"
    )
    write_files(tmp_path, files)
    advice = "calls into it are not followed. Add its folder to `src` in [tool.replaytest] if it lives under another source root."
    assert lint(tmp_path).notes == [
        f"note: cannot resolve project module 'packaging.specifiers' (imported by warehouse/flows/fulfil.py); {advice}",
        f"note: cannot resolve project module 'packaging.version' (imported by warehouse/flows/fulfil.py); {advice}",
    ]
