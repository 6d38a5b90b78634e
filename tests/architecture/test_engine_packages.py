"""The shape of the engine packages under ``replaytest/plugins/`` (docs/engines.md): each built-in engine is one
package whose ``__init__`` holds its ``PLUGIN`` and whose ``profile.py`` holds its lint profile; an engine package
imports no other engine's package (they share only the modules at the top of ``plugins/``); and the private names
of a third-party library are imported only by the engine's ``internals.py``."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

from replaytest.plugins import BUILTIN_MODULES, FrameworkPlugin

PLUGINS = Path(__file__).resolve().parents[2] / "replaytest" / "plugins"
ENGINES = sorted(path.name for path in PLUGINS.iterdir() if (path / "__init__.py").is_file())
STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, absolute module, imported names)`` of every import in ``path``."""
    package = ".".join(path.relative_to(PLUGINS.parents[1]).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([module] if module else []))
            found.append((node.lineno, module, [alias.name for alias in node.names]))
    return found


def test_every_builtin_engine_is_a_package() -> None:
    assert sorted(BUILTIN_MODULES) == ENGINES, "an engine module outside a package, or a package not registered"


@pytest.mark.parametrize("engine", ENGINES)
def test_an_engine_package_holds_its_plugin_and_profile(engine: str) -> None:
    package = importlib.import_module(f"replaytest.plugins.{engine}")
    profile = importlib.import_module(f"replaytest.plugins.{engine}.profile")
    assert isinstance(package.PLUGIN, FrameworkPlugin)
    assert package.PLUGIN.profile is profile.PROFILE
    assert package.__doc__ and profile.__doc__, "a module says at its top what lives in it"


@pytest.mark.parametrize("engine", ENGINES)
def test_an_engine_package_imports_no_other_engine(engine: str) -> None:
    others = [other for other in ENGINES if other != engine]
    wrong = [
        f"{path.name}:{line} imports {module}"
        for path in sorted((PLUGINS / engine).rglob("*.py"))
        for line, module, _ in _imports(path)
        if any(module == f"replaytest.plugins.{other}" or module.startswith(f"replaytest.plugins.{other}.") for other in others)
    ]
    assert not wrong, "; ".join(wrong)


@pytest.mark.parametrize("engine", ENGINES)
def test_private_names_of_a_library_are_imported_only_by_internals(engine: str) -> None:
    wrong = []
    for path in sorted((PLUGINS / engine).rglob("*.py")):
        if path.name == "internals.py":
            continue
        for line, module, names in _imports(path):
            if module.split(".")[0] in STDLIB or module.startswith("replaytest"):
                continue
            private = [part for part in module.split(".") if part.startswith("_")]
            private += [name for name in names if name.startswith("_")]
            if private:
                wrong.append(f"{path.name}:{line} imports {module} ({', '.join(private)})")
    assert not wrong, "; ".join(wrong)


def test_the_private_name_check_sees_one(tmp_path: Path) -> None:
    """Guard against a check that passes because it reads nothing: internals.py does import private names."""
    private = [
        module for _, module, names in _imports(PLUGINS / "temporal" / "internals.py")
        if any(part.startswith("_") for part in module.split(".")) or any(name.startswith("_") for name in names)
    ]
    assert "temporalio.worker._workflow_instance" in private
