"""Project imports resolve the way Python resolves them: PEP 420 namespace packages, source roots (the
``src`` setting and automatic detection), and one note for a project-looking import nothing holds.

Every project here is written by the test; the expected findings are stated in the test, never computed
by the linter.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from lintkit import run_replaytest

from replaytest.config import Config, ConfigError, load_config
from replaytest.lint.engine import build_context, lint_paths
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]

# A Temporal workflow whose only problem hides in a helper of another module (``{module}``).
WORKFLOW = """
from temporalio import workflow

from {module} import region


@workflow.defn
class Flow:
    @workflow.run
    async def run(self) -> str:
        return region()
"""
HELPER = """
import os


def region() -> str:
    return os.environ["REGION"]
"""
CALL_LINE = 10  # `return region()` in WORKFLOW (leading newline stripped)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def lint(root: Path, targets: list[Path] | None = None, config: Config | None = None):
    config = config or load_config(root)
    return lint_paths(targets or [root], config, PROFILES, use_cache=False, jobs=1,
                      context=build_context(config, PROFILES), cwd=root)


def found(result) -> list[tuple[str, int, str, tuple[str, ...]]]:
    return [(d.path, d.line, d.rule, d.trace) for d in result.diagnostics]


def test_namespace_package_without_init_resolves_like_python(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.replaytest]\n", "app/wf.py": WORKFLOW.format(module="app.util"),
                     "app/util.py": HELPER})
    assert not (tmp_path / "app" / "__init__.py").exists()
    assert found(lint(tmp_path, [tmp_path / "app"])) == [
        ("app/wf.py", CALL_LINE, "RT204", ("app.wf.Flow.run", "app.util.region", "os.environ")),
    ]


def test_nested_namespace_packages_and_relative_imports(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": "[tool.replaytest]\n",
        "app/flows/wf.py": WORKFLOW.format(module="..helpers.env"),
        "app/helpers/env.py": HELPER,
    })
    assert found(lint(tmp_path)) == [
        ("app/flows/wf.py", CALL_LINE, "RT204", ("app.flows.wf.Flow.run", "app.helpers.env.region", "os.environ")),
    ]


def test_src_layout_namespace_package(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.replaytest]\n", "src/shop/wf.py": WORKFLOW.format(module="shop.util"),
                     "src/shop/util.py": HELPER})
    assert found(lint(tmp_path)) == [
        ("src/shop/wf.py", CALL_LINE, "RT204", ("shop.wf.Flow.run", "shop.util.region", "os.environ")),
    ]


NESTED = {
    "pyproject.toml": "[tool.replaytest]\n",
    "service/src_app/orders/__init__.py": "",
    "service/src_app/orders/wf.py": WORKFLOW.format(module="orders.util"),
    "service/src_app/orders/util.py": HELPER,
}


def test_nested_source_root_is_detected_from_the_imported_package(tmp_path: Path) -> None:
    # `orders` is imported relative to service/src_app (that folder is on sys.path when the service runs);
    # linting from the repository root finds the helper without any configuration.
    write(tmp_path, NESTED)
    result = lint(tmp_path)
    assert found(result) == [
        ("service/src_app/orders/wf.py", CALL_LINE, "RT204", ("orders.wf.Flow.run", "orders.util.region", "os.environ")),
    ]
    assert result.notes == []


def test_nested_source_root_detected_for_namespace_packages_too(tmp_path: Path) -> None:
    files = {name: text for name, text in NESTED.items() if not name.endswith("__init__.py")}
    write(tmp_path, files)
    assert [(path, line, rule) for path, line, rule, _ in found(lint(tmp_path))] == [
        ("service/src_app/orders/wf.py", CALL_LINE, "RT204"),
    ]


def test_helper_screened_out_and_not_linted_is_found_through_a_detected_root(tmp_path: Path) -> None:
    files = {name: text for name, text in NESTED.items() if not name.endswith("__init__.py")}
    write(tmp_path, files)
    # Only the workflow file is linted; the helper is found on disk through the detected root.
    result = lint(tmp_path, [tmp_path / "service" / "src_app" / "orders" / "wf.py"])
    assert [(path, line, rule) for path, line, rule, _ in found(result)] == [
        ("service/src_app/orders/wf.py", CALL_LINE, "RT204"),
    ]


def test_configured_src_names_modules_relative_to_it(tmp_path: Path) -> None:
    files = {name: text for name, text in NESTED.items() if not name.endswith("__init__.py")}
    files["pyproject.toml"] = '[tool.replaytest]\nsrc = ["service/src_app"]\n'
    write(tmp_path, files)
    assert found(lint(tmp_path)) == [
        ("service/src_app/orders/wf.py", CALL_LINE, "RT204", ("orders.wf.Flow.run", "orders.util.region", "os.environ")),
    ]


def test_configured_src_accepts_globs(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": '[tool.replaytest]\nsrc = ["services/*/src"]\n',
        "services/billing/src/billing/wf.py": WORKFLOW.format(module="billing.util"),
        "services/billing/src/billing/util.py": HELPER,
    })
    assert found(lint(tmp_path)) == [
        ("services/billing/src/billing/wf.py", CALL_LINE, "RT204",
         ("billing.wf.Flow.run", "billing.util.region", "os.environ")),
    ]


def test_src_entry_that_matches_no_folder_is_a_configuration_error(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.replaytest]\nsrc = ["srcc"]\n', "wf.py": "x = 1\n"})
    with pytest.raises(ConfigError, match="src: 'srcc' matches no folder"):
        lint(tmp_path)
    run = run_replaytest("lint", "--no-cache", ".", cwd=tmp_path)
    assert run.returncode == 2, run.describe()
    assert "[tool.replaytest] src: 'srcc' matches no folder" in run.stderr


def test_src_must_be_a_list_of_strings(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.replaytest]\nsrc = "service"\n'})
    with pytest.raises(ConfigError, match="src: must be a list of strings"):
        load_config(tmp_path)


UNRESOLVED_WORKFLOW = """
from temporalio import workflow

import app.gone.deeper
from app.gone import region, zone
from app import missing_mod


@workflow.defn
class Flow:
    @workflow.run
    async def run(self) -> str:
        return region() + zone() + region() + missing_mod.f() + app.gone.deeper.f()
"""


def test_unresolved_project_import_is_one_note_not_one_per_site(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": "[tool.replaytest]\n",
        "app/wf.py": UNRESOLVED_WORKFLOW,
        "app/other.py": UNRESOLVED_WORKFLOW.replace("class Flow", "class Other"),
        "app/present.py": HELPER,
    })
    result = lint(tmp_path)
    assert result.diagnostics == []
    gone = [note for note in result.notes if "'app.gone'" in note]
    missing = [note for note in result.notes if "'app.missing_mod'" in note]
    assert len(gone) == 1 and len(missing) == 1, result.notes
    assert len(result.notes) == 2, result.notes
    assert "imported by app/other.py" in gone[0] and "not followed" in gone[0]


def test_unresolved_note_reaches_the_command_line_once(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.replaytest]\n", "app/wf.py": UNRESOLVED_WORKFLOW,
                     "app/present.py": HELPER})
    run = run_replaytest("lint", "--no-cache", ".", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert run.stderr.count("cannot resolve project module 'app.gone'") == 1, run.stderr
    assert "'app.gone.deeper'" not in run.stderr, run.stderr
    assert run.stderr.count("cannot resolve project module") == 2, run.stderr


def test_third_party_and_standard_library_imports_are_not_noted(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": "[tool.replaytest]\n",
        "app/wf.py": """
            import json
            from temporalio import workflow
            from somevendor.client import fetch_settings


            @workflow.defn
            class Flow:
                @workflow.run
                async def run(self) -> str:
                    return json.dumps(fetch_settings())
            """,
    })
    assert lint(tmp_path).notes == []


def test_a_project_file_never_shadows_the_standard_library(tmp_path: Path) -> None:
    # tools/json.py is a project module, but `import json` in a workflow means the standard library.
    write(tmp_path, {
        "pyproject.toml": "[tool.replaytest]\n",
        "tools/json.py": "import os\n\ndef dumps(value):\n    return os.environ['X']\n",
        "tools/wf.py": """
            import json
            from temporalio import workflow


            @workflow.defn
            class Flow:
                @workflow.run
                async def run(self) -> str:
                    return json.dumps({})
            """,
    })
    assert lint(tmp_path).diagnostics == []


def test_without_pyproject_the_root_is_the_working_directory(tmp_path: Path) -> None:
    # No pyproject.toml and no checkout: like ruff, the current directory is the project root, so
    # `lint app` names modules app.* and writes its cache beside app/, not inside it.
    write(tmp_path, {"app/wf.py": WORKFLOW.format(module="app.util"), "app/util.py": HELPER})
    run = run_replaytest("lint", "--format", "json", "app", cwd=tmp_path)
    assert run.returncode == 1, run.describe()
    assert [d["trace"] for d in run.json()["diagnostics"]] == [["app.wf.Flow.run", "app.util.region", "os.environ"]]
    assert (tmp_path / ".replaytest_cache" / "lint").is_dir()
    assert not (tmp_path / "app" / ".replaytest_cache").exists()


def test_without_pyproject_the_root_is_the_checkout_top_level(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path, {"service/app/wf.py": WORKFLOW.format(module="app.util"), "service/app/util.py": HELPER})
    run = run_replaytest("lint", "--format", "json", "app", cwd=tmp_path / "service")
    assert run.returncode == 1, run.describe()
    assert [d["path"] for d in run.json()["diagnostics"]] == ["app/wf.py"]
    assert (tmp_path / ".replaytest_cache" / "lint").is_dir()
    assert not (tmp_path / "service" / ".replaytest_cache").exists()
    assert not (tmp_path / "service" / "app" / ".replaytest_cache").exists()
    assert load_config(tmp_path / "service" / "app").root == tmp_path.resolve()


def test_unresolved_submodule_of_a_regular_package_is_noted(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": "[tool.replaytest]\n",
        "app/__init__.py": "def helper():\n    return 1\n",
        "app/wf.py": """
            from temporalio import workflow

            import app
            from app.gone import region


            @workflow.defn
            class Flow:
                @workflow.run
                async def run(self) -> str:
                    return region() + app.helper()
            """,
    })
    notes = lint(tmp_path).notes
    assert len(notes) == 1 and "'app.gone'" in notes[0], notes


def test_classes_and_instances_of_resolved_modules_are_not_noted(tmp_path: Path) -> None:
    # The walk tries app.util.Registry as a module before app.util; Registry is a class there, not a
    # missing module, so there is nothing to report beyond the finding itself.
    write(tmp_path, {
        "pyproject.toml": "[tool.replaytest]\n",
        "app/util.py": """
            import os


            class Registry:
                @staticmethod
                def region() -> str:
                    return os.environ["REGION"]


            registry = Registry()
            """,
        "app/wf.py": """
            from temporalio import workflow

            from app.util import Registry, registry


            @workflow.defn
            class Flow:
                @workflow.run
                async def run(self) -> str:
                    return Registry.region() + registry.region()
            """,
    })
    result = lint(tmp_path)
    assert result.notes == []
    assert {(d.path, d.rule) for d in result.diagnostics} == {("app/wf.py", "RT204")}


def test_calls_through_classes_print_no_note_on_the_command_line(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": "[tool.replaytest]\n",
        "app/util.py": "import os\n\n\nclass Env:\n    @staticmethod\n    def region() -> str:\n        return os.environ['R']\n",
        "app/wf.py": WORKFLOW.format(module="app.util").replace("import region", "import Env").replace(
            "return region()", "return Env.region()"),
    })
    run = run_replaytest("lint", "--no-cache", "app", cwd=tmp_path)
    assert run.returncode == 1, run.describe()
    assert "RT204" in run.stdout and run.stderr == "", run.describe()


def test_the_standard_library_is_never_a_project_module(tmp_path: Path) -> None:
    from replaytest.lint.discovery import ModuleNamer

    write(tmp_path, {"tools/json.py": "x = 1\n", "tools/wf.py": "import json\n", "tools/helpers.py": "y = 2\n"})
    namer = ModuleNamer(tmp_path.resolve())
    for path in sorted((tmp_path / "tools").glob("*.py")):
        namer.names(path.resolve())
    assert namer.locate("json") is None and namer.locate("json.decoder") is None
    assert namer.locate("helpers") == (tmp_path / "tools" / "helpers.py").resolve()


def test_standard_library_names_do_not_look_like_project_modules(tmp_path: Path) -> None:
    from replaytest.lint.discovery import ModuleNamer

    write(tmp_path, {"app/logging.py": "x = 1\n", "app/wf.py": "y = 2\n"})
    namer = ModuleNamer(tmp_path.resolve())
    namer.names((tmp_path / "app" / "wf.py").resolve())
    assert not namer.looks_like_project("logging.handlers")
    assert namer.looks_like_project("app.gone")
    assert namer.unresolved_project_modules(["logging.handlers", "app.gone"]) == ["app.gone"]


def test_a_folder_named_later_still_holds_modules_of_a_name_looked_up_before(tmp_path: Path) -> None:
    # Detected roots of one top-level name are remembered; a file named afterwards (a helper loaded
    # lazily) brings new candidate folders, and a later lookup of that name must see them.
    from replaytest.lint.discovery import ModuleNamer

    write(tmp_path, {"app/wf.py": "x = 1\n", "svc/src/main.py": "y = 2\n", "svc/helpers/__init__.py": "",
                     "svc/helpers/inner.py": "z = 3\n", "lib/base.py": "", "lib/pkg/__init__.py": "",
                     "lib/pkg/mod.py": "", "lib/pkg/tools/__init__.py": "", "lib/pkg/tools/inner.py": ""})
    root = tmp_path.resolve()
    namer = ModuleNamer(root, [root / "app"])
    namer.names(root / "app" / "wf.py")
    assert namer.locate("helpers") is None  # svc/ is no candidate folder yet
    namer.names(root / "svc" / "src" / "main.py")  # a new import root (svc/src) and candidate (svc/)
    assert namer.locate("helpers.inner") == root / "svc" / "helpers" / "inner.py"
    namer.names(root / "lib" / "base.py")
    assert namer.locate("tools") is None
    namer.names(root / "lib" / "pkg" / "mod.py")  # only a new candidate (lib/pkg/): lib/ is a root already
    assert namer.locate("tools.inner") == root / "lib" / "pkg" / "tools" / "inner.py"
