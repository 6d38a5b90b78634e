"""The dependency direction of docs/design.md, checked on the source: imports point down the list
faces → impact → plugins → lint, replay → journal → prompts → history → config, never up, and no module imports a face.

Imports under ``if TYPE_CHECKING:`` are annotations only and are allowed anywhere; lazy imports inside
functions count, because they run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "replaytest"

# For each layer, the project layers it may import (besides itself and the package root's constants).
ALLOWED: dict[str, set[str]] = {
    # The short modules users import (``replaytest.dbos``, …): names of the engine packages, handed out;
    # nothing in replaytest imports them.
    "public": {"plugins", "prompts", "journal", "history", "config"},
    # ``python -m replaytest`` (a face) starts the click group (a face); nothing below imports a face.
    "faces": {"faces", "settings_report", "impact", "plugins", "lint", "replay", "journal", "prompts", "history", "config"},
    # Deploy impact works from replay results and the code's syntax; the faces hand it files and replayers.
    "impact": {"impact", "lint", "replay", "journal", "prompts", "history", "config"},
    "plugins": {"plugins", "lint", "replay", "journal", "prompts", "history", "config"},
    "lint": {"lint", "config"},
    "replay": {"replay", "journal", "prompts", "history", "config"},
    "journal": {"journal", "prompts", "history", "config"},
    # ``replaytest.prompts``: the engine-neutral Prompt that workflow code of every engine imports.
    "prompts": {"prompts", "history"},
    "history": {"history"},
    "config": {"config"},
    # ``lint --show-settings``: renders a resolved Config for the command line.
    "settings_report": {"config"},
    "fileio": set(),
    "cachedir": set(),
    "entry_points": set(),
    "model_clients": set(),
    "path_patterns": set(),
    "records": set(),
}
# Reading input files safely (regular files only), taking the cache folder and reading an entry-point group
# (stdlib-only leaves) are shared by every layer, and so is the catalogue of model-client calls that lint
# and replay both read, what a path glob or a .gitignore means (path_patterns: pathspec, no project import) and
# the written-out dataclass methods (records).
for _allowed in ALLOWED.values():
    _allowed.update(("fileio", "cachedir", "entry_points", "model_clients", "path_patterns", "records"))


# The short public modules, one per engine (README "Public names"); the journal runtime and the prompts are
# layers of their own.
PUBLIC_MODULES = ("dbos", "temporal", "langgraph", "restate", "azure_durable")


def _layer(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "replaytest" or len(parts) == 1:
        return "root"
    head = parts[1]
    if head in ("cli", "pytest_plugin", "__main__", "gate", "double_run_cli", "lint_entry"):
        return "faces"
    if head in PUBLIC_MODULES:
        return "public"
    return head


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_checking_lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for inner in ast.walk(child):
                    type_checking_lines.add(getattr(inner, "lineno", -1))
    package = _module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno in type_checking_lines:
            continue
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
    return [(line, name) for line, name in found if name.split(".")[0] == "replaytest"]


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(PACKAGE.parent)) for p in SOURCES])
def test_imports_follow_the_dependency_direction(path: Path) -> None:
    own = _layer(_module_name(path))
    if own == "root":
        return  # replaytest/__init__.py holds only the version
    allowed = ALLOWED[own]
    wrong = [
        f"line {line}: {name} ({_layer(name)})"
        for line, name in _runtime_imports(path)
        if _layer(name) not in allowed and _layer(name) != "root"
    ]
    assert not wrong, f"{path.name} is in layer {own!r}, which may import only {sorted(allowed)}: " + "; ".join(wrong)


def test_rules_and_engine_reach_frameworks_only_through_profiles() -> None:
    """No module outside plugins/ imports a framework plugin module (temporal, dbos, …) directly."""
    offenders = []
    for path in SOURCES:
        if _layer(_module_name(path)) in ("plugins", "public"):
            continue
        for line, name in _runtime_imports(path):
            if name.startswith("replaytest.plugins."):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}")
    assert not offenders, "; ".join(offenders)


def test_the_layering_check_sees_a_wrong_import(tmp_path: Path) -> None:
    """Guard against a checker that passes because it reads nothing."""
    assert _runtime_imports(PACKAGE / "cli" / "check_commands.py"), \
        "cli/check_commands.py imports project modules; the checker must see them"
    assert _layer("replaytest.cli.check_commands") == "faces" and _layer("replaytest.cli") == "faces"
    assert _layer("replaytest.replay.engine") == "replay" and "replay" not in ALLOWED["lint"]


def test_loading_plugins_for_lint_imports_no_replay_machinery() -> None:
    """Every lint run loads all plugins for their profiles; replayers and importers (the import commands)
    load on first use.
    (``replaytest.replay.divergence`` holds only the result data types plugins describe histories with.)"""
    import subprocess
    import sys

    code = (
        "import sys; from replaytest.plugins import load_plugins; plugins = load_plugins(); "
        "heavy = sorted(m for m in sys.modules if m.startswith(('replaytest.replay.', 'replaytest.journal', "
        "'replaytest.history', 'temporalio', 'asyncio')) and m != 'replaytest.replay.divergence'); "
        "heavy += sorted(m for m in sys.modules if m.startswith('replaytest.plugins.') and m.endswith('.importer')); "
        "print(' '.join(heavy))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert run.stdout.strip() == "", f"loading plugins imported: {run.stdout.strip()}"


def test_lint_never_imports_libcst_and_fix_does(tmp_path: Path) -> None:
    """Lint parses with CPython's ``ast``; libcst (its import alone was most of a warm one-file run) is
    loaded only by ``fix``, which rewrites files keeping their formatting."""
    import subprocess
    import sys
    import textwrap

    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    (tmp_path / "wf.py").write_text(textwrap.dedent("""
        import time
        from temporalio import workflow

        @workflow.defn
        class Flow:
            @workflow.run
            async def run(self) -> float:
                return time.time()
    """), encoding="utf-8")
    code = (
        "import sys; from replaytest.cli import main\n"
        "sys.argv = ['replaytest', 'lint', '.']\ntry:\n    main()\nexcept SystemExit as exit:\n    print('exit', exit.code)\n"
        "print('libcst' in sys.modules)"
    )
    runs = [subprocess.run([sys.executable, "-c", code.replace("'lint'", f"'{command}'")], capture_output=True,
                           text=True, timeout=120, cwd=tmp_path)
            for command in ("lint", "lint", "fix")]
    cold, warm, fixing = (run.stdout.split() for run in runs)
    assert cold[-3:] == ["exit", "1", "False"], runs[0].stdout + runs[0].stderr  # it found the clock read
    assert warm[-3:] == ["exit", "1", "False"], runs[1].stdout + runs[1].stderr
    assert fixing[-1] == "True", runs[2].stdout + runs[2].stderr
    assert "workflow.time()" in (tmp_path / "wf.py").read_text(encoding="utf-8")  # the safe fix was applied


def test_lint_command_imports_no_other_command_and_no_replay_machinery(tmp_path: Path) -> None:
    """``replaytest lint`` as the pre-commit hook runs it (output captured) imports neither click nor any command
    module (``lint_entry``'s lean path); with another option it is the click command, which imports its own
    module only: the other commands' modules (check, replay, impact, corpus, …) and the replay side load when
    their command runs. ``--help`` of the group still lists every command."""
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    (tmp_path / "wf.py").write_text("from temporalio import workflow\n", encoding="utf-8")
    code = (
        "import sys; from replaytest.cli import main\n"
        "sys.argv = ['replaytest', 'lint', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    print('exit', exit.code)\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('replaytest.cli.', 'replaytest.replay', "
        "'replaytest.journal', 'replaytest.history', 'replaytest.impact', 'replaytest.double_run_cli', 'temporalio',"
        " 'click')) and m != 'click' and not m.startswith('click.'))\n"
        "print(' '.join(loaded), 'click' in sys.modules)"
    )

    def modules_loaded(*arguments: str) -> list[str]:
        run = subprocess.run([sys.executable, "-c", code, *arguments], capture_output=True, text=True, timeout=120,
                             cwd=tmp_path)
        *_, exit_line, loaded = run.stdout.strip().split("\n")
        assert exit_line == "exit 0", run.stdout + run.stderr
        return loaded.split()

    assert modules_loaded("--whole-project", "--force-exclude", "wf.py") == ["False"], "the hook's lint loaded these"
    # The progress bar (a click bar, no replay machinery) is the one module under replay/ lint uses.
    assert modules_loaded("--statistics", "wf.py") == [
        "replaytest.cli.lint_command", "replaytest.cli.process", "replaytest.cli.shared", "replaytest.replay",
        "replaytest.replay.progress", "True"]
    listing = subprocess.run([sys.executable, "-m", "replaytest", "--help"], capture_output=True, text=True,
                             timeout=120, cwd=tmp_path)
    for command in ("check", "double-run", "impact", "lint", "merge-results", "replay", "rules"):
        assert f"\n  {command} " in listing.stdout, listing.stdout
