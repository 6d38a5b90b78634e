"""The names users import are a contract: every ``from replaytest… import …``, every dotted
``replaytest.…`` name in inline code and every name of the "Public names" table that README.md and
docs/*.md show imports, from the path shown and without a ``DeprecationWarning`` (the markdown is parsed;
no list is kept here). The short modules hand out the very objects their engine packages define, load them
on first use, and the old paths of moved names still work for a release, warning with the new path."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_NAME = r"replaytest(?:\.[A-Za-z_]\w*)*"
_FROM_IMPORT = re.compile(rf"^\s*from\s+({_NAME})\s+import\s+(\([^)]*\)|[^\n#]+)", re.MULTILINE)
_IMPORT = re.compile(rf"^\s*import\s+({_NAME})\s*$", re.MULTILINE)
_INLINE = re.compile(r"(?<!`)`([^`]+?)`(?!`)")
_DOTTED = re.compile(rf"^({_NAME}\.[A-Za-z_]\w*(?::[A-Za-z_][\w.]*)?)(?=$|[(\s])")
# An entry-point group or a logger is named like a module without being one; the prose says which it is.
_NOT_MODULE_CONTEXT = re.compile(r"(entry-point group|logger)\s*\(?$")
# A file name written like a dotted name (``replaytest.toml``, the configuration file) is not a module.
_FILE_SUFFIXES = (".toml", ".json", ".md", ".yaml", ".yml", ".txt", ".cfg", ".ini", ".log", ".sarif", ".xml")
_TABLE_ROW = re.compile(rf"^\|\s*`({_NAME})`\s*\|([^|]*)\|\s*$", re.MULTILINE)


def _shown() -> dict[str, str]:
    """Every name the documents show, as ``module:attribute`` (or a module alone), and where."""
    shown: dict[str, str] = {}
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        where = document.relative_to(ROOT).as_posix()
        for match in _FROM_IMPORT.finditer(text):
            for name in match.group(2).strip("()").split(","):
                name = name.split(" as ")[0].strip()
                if name.isidentifier():
                    shown.setdefault(f"{match.group(1)}:{name}", where)
        for match in _IMPORT.finditer(text):
            shown.setdefault(match.group(1), where)
        for match in _INLINE.finditer(text):
            dotted = _DOTTED.match(match.group(1))
            if dotted and not dotted.group(1).endswith(_FILE_SUFFIXES) and not _NOT_MODULE_CONTEXT.search(text[: match.start()][-40:]):
                shown.setdefault(dotted.group(1), where)
        for match in _TABLE_ROW.finditer(text):
            names = _INLINE.findall(match.group(2).split("(")[0])
            for name in names:
                if name.isidentifier():
                    shown.setdefault(f"{match.group(1)}:{name}", where)
    return shown


def _resolve(name: str) -> Any:
    """What ``name`` names: ``module:attribute``, or a dotted path whose longest importable prefix is a module."""
    module, _, attribute = name.partition(":")
    parts = module.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in [*parts[cut:], *(attribute.split(".") if attribute else [])]:
            obj = getattr(obj, part)
        return obj
    raise ModuleNotFoundError(name)


SHOWN = _shown()


def test_the_documents_show_the_public_names() -> None:
    """Guard against a parser that finds nothing: the names the README's examples and table use are seen."""
    for name in ("replaytest.dbos:use_prompt", "replaytest.temporal:PromptInterceptor", "replaytest.prompts:Prompt",
                 "replaytest.langgraph.histories_from_saver", "replaytest.dbos.DBOSReplayConfig", "replaytest.journal:Journal",
                 "replaytest.restate:RestateReplayer"):
        assert name in SHOWN, sorted(SHOWN)
    assert not [name for name in SHOWN if name.startswith("replaytest.rules")]  # an entry-point group, said so


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_every_name_the_documents_show_imports_without_a_deprecation(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            _resolve(name)
        except (ImportError, AttributeError, DeprecationWarning) as error:
            pytest.fail(f"{SHOWN[name]} shows {name}, which does not import: {type(error).__name__}: {error}")


PUBLIC = {
    "replaytest.dbos": {"DBOSReplayConfig": "replaytest.plugins.dbos.replayer", "DBOSReplayer": "replaytest.plugins.dbos.replayer",
                        "use_prompt": "replaytest.plugins.dbos.prompts", "with_prompts": "replaytest.plugins.dbos.prompts"},
    "replaytest.temporal": {"TemporalReplayConfig": "replaytest.plugins.temporal.replayer", "TemporalReplayer": "replaytest.plugins.temporal.replayer",
                            "PromptInterceptor": "replaytest.plugins.temporal.prompts", "use_prompt": "replaytest.plugins.temporal.prompts"},
    "replaytest.langgraph": {"histories_from_saver": "replaytest.plugins.langgraph.importer",
                             "ahistories_from_saver": "replaytest.plugins.langgraph.async_savers",
                             "use_prompt": "replaytest.plugins.langgraph.prompts", "with_prompts": "replaytest.plugins.langgraph.prompts",
                             "LangGraphReplayer": "replaytest.plugins.langgraph.replayer"},
    "replaytest.restate": {"RestateReplayer": "replaytest.plugins.restate.replayer"},
    "replaytest.azure_durable": {"AzureDurableReplayer": "replaytest.plugins.azure_durable.replayer"},
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_a_short_module_hands_out_the_objects_its_engine_defines(module: str) -> None:
    public = importlib.import_module(module)
    assert public.__doc__, "a module says at its top what lives in it"
    assert sorted(public.__all__) == sorted(PUBLIC[module])
    for name, source in PUBLIC[module].items():
        assert getattr(public, name) is getattr(importlib.import_module(source), name)
    star: dict[str, Any] = {}
    exec(f"from {module} import *", star)  # noqa: S102 - what a star import gives
    assert set(PUBLIC[module]) <= set(star)
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        public.nothing_here  # noqa: B018


def test_taking_a_replay_configuration_sets_off_no_prompt_recording() -> None:
    code = (
        "import sys\nfrom replaytest.dbos import DBOSReplayConfig\nfrom replaytest.langgraph import histories_from_saver\n"
        "print('replaytest.plugins.dbos.prompts' in sys.modules, 'replaytest.plugins.langgraph.prompts' in sys.modules)\n"
        "from replaytest.dbos import use_prompt\nprint('replaytest.plugins.dbos.prompts' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert run.stdout.split() == ["False", "False", "True"], run.stdout + run.stderr


MOVED = [
    ("replaytest.plugins.dbos_replay", "DBOSReplayConfig", "replaytest.dbos"),
    ("replaytest.plugins.langgraph_import", "histories_from_saver", "replaytest.langgraph"),
    ("replaytest.plugins.temporal_replay", "TemporalReplayConfig", "replaytest.temporal"),
    ("replaytest.plugins.temporal_prompts", "PromptInterceptor", "replaytest.temporal"),
    ("replaytest.plugins.temporal_prompts", "use_prompt", "replaytest.temporal"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_an_old_path_still_works_for_a_release_and_warns_with_the_new_one(old: str, name: str, new: str) -> None:
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"{re.escape(old)}\.{name} moved: import it from {re.escape(new)}"):
        obj = getattr(module, name)
    assert obj is getattr(importlib.import_module(new), name)


def test_an_old_path_named_in_replay_workflows_still_loads(tmp_path: Path) -> None:
    """A configuration that names the moved object by its old path (``module:attribute``) keeps working."""
    from replaytest.replay.runner import load_workflows

    with pytest.warns(DeprecationWarning, match="import it from replaytest.dbos"):
        loaded = load_workflows(["replaytest.plugins.dbos_replay:DBOSReplayConfig"])
    assert loaded.objects[0] is importlib.import_module("replaytest.dbos").DBOSReplayConfig
