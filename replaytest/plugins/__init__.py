"""Framework plugins: the one object per framework that tells replaytest what it must know about it.

``FrameworkPlugin`` bundles a lint profile (how orchestration code and steps are marked, which calls are
the framework's safe replacements), and optionally a history replayer and an import command. Built-in
plugins live in this package, one module each, exposing ``PLUGIN``; third-party ones register the same
kind of object under the entry-point group ``replaytest.plugins``. The faces load them with
``load_plugins`` and hand profiles to the linter and replayers to the replay side, so neither of those
imports a framework module. The faces reach the import record (``import_record``: each import remembered in
its folder, ``import refresh``) through ``recording_import`` and ``refresh_imports``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from replaytest.entry_points import entry_points
from replaytest.records import FrozenRecord

if TYPE_CHECKING:
    from pathlib import Path

    import click

    from replaytest.lint.profile import FrameworkProfile
    from replaytest.replay.adapter import HistoryReplayer, LoadedHistory, ReplayOptions, WorkflowSet
    from replaytest.replay.divergence import ReplayResult

BUILTIN_MODULES: tuple[str, ...] = ("temporal", "dbos", "langgraph", "restate", "azure_durable", "aws_durable", "journal")
ENTRY_POINT_GROUP = "replaytest.plugins"


class PluginError(Exception):
    """A plugin could not be loaded or is not a FrameworkPlugin."""


class FrameworkPlugin(FrozenRecord):
    """One engine's plugin: its lint profile, its replayer and the commands and readers it adds."""

    name: str
    profile: FrameworkProfile | None = None
    replayer: HistoryReplayer | None = None
    # ``replaytest import <name> …``: a click command that fetches histories from the engine, or its
    # ``"module:attribute"``, imported only when ``import`` runs that subcommand (every lint run loads every
    # plugin, and the importers are the largest modules a plugin has: 0.08 s of a one-file run together).
    import_command: click.Command | str | None = None
    # The subcommand's name (``import azure-durable``); by default the plugin's name with ``-`` for ``_``.
    import_name: str | None = None
    # ``"module:function"`` redacting one of the engine's own history files (``replaytest redact``):
    # ``function(source, target, redactor) -> values replaced``; imported on first use.
    history_redactor: str | None = None
    # ``"module:function"`` reading one of the engine's own history files as a neutral ``History`` of its
    # commands (``replaytest diff``): ``function(path) -> History``; imported on first use.
    history_reader: str | None = None
    # ``"module:function"`` running one orchestration function once with every step stubbed (``replaytest
    # double-run``): ``function(workflows, case, conditions) -> replay.double_run.Trace``; imported on first use.
    double_run_tracer: str | None = None
    # ``"module:function"`` taking a double-run case from one of the engine's own history files (not a neutral
    # history): ``function(path, head) -> replay.double_run.DoubleRunCase | None`` (None: not its format;
    # ``DoubleRunInputError`` naming the place: its format, but no case can be taken); imported on first use.
    double_run_case_reader: str | None = None

    def __init__(
        self, name: str, profile: FrameworkProfile | None = None, replayer: HistoryReplayer | None = None,
        import_command: click.Command | str | None = None, import_name: str | None = None,
        history_redactor: str | None = None, history_reader: str | None = None, double_run_tracer: str | None = None,
        double_run_case_reader: str | None = None,
    ) -> None:
        self.__dict__.update(name=name, profile=profile, replayer=replayer, import_command=import_command,
            import_name=import_name, history_redactor=history_redactor, history_reader=history_reader,
            double_run_tracer=double_run_tracer, double_run_case_reader=double_run_case_reader)

    @property
    def import_command_name(self) -> str | None:
        """The name of ``replaytest import``'s subcommand for this plugin, without importing it."""
        if self.import_command is None:
            return None
        if self.import_name is not None:
            return self.import_name
        if not isinstance(self.import_command, str) and self.import_command.name:
            return self.import_command.name
        return self.name.replace("_", "-")

    def load_import_command(self) -> click.Command | None:
        """The import subcommand, imported now if the plugin names it by ``"module:attribute"``."""
        if self.import_command is None or not isinstance(self.import_command, str):
            return self.import_command
        module_name, _, attribute = self.import_command.partition(":")
        try:
            command = getattr(importlib.import_module(module_name), attribute)
        except Exception as error:  # a broken third-party importer must say which one it was
            raise PluginError(f"plugin {self.name!r}: import command {self.import_command} failed to load: {error}") from error
        return command  # type: ignore[no-any-return]

    def redact_history_file(self, source: Path, target: Path, redactor: Any) -> int:
        if self.history_redactor is None:
            raise PluginError(f"plugin {self.name!r} cannot redact its history files")
        module_name, _, attribute = self.history_redactor.partition(":")
        function = getattr(importlib.import_module(module_name), attribute)
        return int(function(source, target, redactor))

    def read_history(self, path: Path) -> Any:
        if self.history_reader is None:
            raise PluginError(f"plugin {self.name!r} cannot read its history files for diff")
        module_name, _, attribute = self.history_reader.partition(":")
        return getattr(importlib.import_module(module_name), attribute)(path)


class LazyReplayer:
    """A ``HistoryReplayer`` that imports its implementation (``"module:Class"``) on first use.

    Building a plugin must stay cheap: ``replaytest lint`` loads every plugin for its profile on each
    commit and never replays, so it should not import the replay machinery (or a framework SDK)."""

    def __init__(self, engine: str, target: str) -> None:
        self.engine = engine
        self._target = target
        self._instance: HistoryReplayer | None = None

    def _load(self) -> HistoryReplayer:
        if self._instance is None:
            module_name, _, attribute = self._target.partition(":")
            self._instance = getattr(importlib.import_module(module_name), attribute)()
        return self._instance

    def sniff(self, head: bytes) -> bool:
        return self._load().sniff(head)

    def replay(self, path: Path, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        return self._load().replay(path, workflows, options)

    def replay_loaded(self, loaded: LoadedHistory, workflows: WorkflowSet, options: ReplayOptions) -> ReplayResult:
        from replaytest.replay.adapter import replay_loaded  # only replay needs it; lint never gets here

        return replay_loaded(self._load(), loaded, workflows, options)


def builtin_plugins() -> list[FrameworkPlugin]:
    plugins = []
    for module_name in BUILTIN_MODULES:
        module = importlib.import_module(f"{__name__}.{module_name}")
        plugins.append(_checked(module.PLUGIN, f"{__name__}.{module_name}"))
    return plugins


def load_plugins(enabled: Sequence[str] = ()) -> list[FrameworkPlugin]:
    """Built-in plus third-party plugins, in a stable order; ``enabled`` (config ``frameworks``) filters
    by name when non-empty. An unknown name in ``enabled`` is a PluginError naming the known ones."""
    plugins = builtin_plugins()
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            plugins.append(_checked(entry.load(), f"entry point {entry.name} = {entry.value}"))
        except PluginError:
            raise
        except Exception as error:  # a broken third-party plugin must say which one it was
            raise PluginError(f"plugin entry point {entry.name} = {entry.value} failed to load: {error}") from error
    if not enabled:
        return plugins
    known = {plugin.name for plugin in plugins}
    unknown = [name for name in enabled if name not in known]
    if unknown:
        raise PluginError(f"unknown framework(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return [plugin for plugin in plugins if plugin.name in enabled]


def _checked(candidate: object, origin: str) -> FrameworkPlugin:
    if not isinstance(candidate, FrameworkPlugin):
        raise PluginError(f"{origin} is {type(candidate).__name__}, not a replaytest FrameworkPlugin")
    return candidate


def recording_import(command: click.Command, name: str) -> click.Command:
    """``command`` (the import subcommand ``name``) recording itself in its folder when it succeeds, for
    ``replaytest import refresh`` (``import_record``, imported only when ``import`` runs)."""
    from replaytest.plugins.import_record import recording

    return recording(command, name)


def refresh_imports(folder: Path, commands: dict[str, click.Command]) -> int:
    """``replaytest import refresh FOLDER`` with the installed import ``commands`` by name; the exit code."""
    from replaytest.plugins.import_record import refresh_folder

    return refresh_folder(folder, commands)

