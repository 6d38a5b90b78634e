"""``replaytest import``: one subcommand per installed framework plugin that can fetch histories, loaded
only when ``import`` runs, each recording itself in the folder it writes; and ``import refresh FOLDER``,
which runs the recorded imports again (``plugins.import_record``, reached through ``plugins``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from replaytest.cli.shared import cli


class _PluginImportGroup(click.Group):
    """Subcommands are the ``import_command`` of each installed plugin, loaded only when ``import`` runs
    (so other commands never import plugin modules for it)."""

    def _plugins(self) -> dict[str, Any]:
        from replaytest.plugins import PluginError, load_plugins

        try:
            plugins = load_plugins()
        except PluginError as error:
            raise click.ClickException(str(error)) from error
        # Keyed by the subcommand's name (``import azure-durable`` for plugin ``azure_durable``); the command
        # itself is imported only when it runs.
        return {name: plugin for plugin in plugins if (name := plugin.import_command_name) is not None}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self._plugins(), *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        from replaytest.plugins import PluginError, recording_import

        if cmd_name in self.commands:  # refresh
            return self.commands[cmd_name]
        plugin = self._plugins().get(cmd_name)
        if plugin is None:
            return None
        try:
            command = plugin.load_import_command()
        except PluginError as error:
            raise click.ClickException(str(error)) from error
        return None if command is None else recording_import(command, cmd_name)

    def engine_commands(self) -> dict[str, click.Command]:
        """Every installed plugin's import command by its subcommand name, as written (not recording)."""
        from replaytest.plugins import PluginError

        commands = {}
        for name, plugin in self._plugins().items():
            try:
                command = plugin.load_import_command()
            except PluginError as error:
                click.echo(f"warning: {error}", err=True)
                continue
            if command is not None:
                commands[name] = command
        return commands


@cli.group("import", cls=_PluginImportGroup)
def import_group() -> None:
    """Fetch histories from a workflow engine into files for replay (one subcommand per framework)."""


@import_group.command("refresh")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
def refresh(folder: Path) -> None:
    """Import FOLDER's histories again with the commands that made it (recorded in FOLDER/.replaytest-imports).

    Each import runs read-only as before; its files are replaced only when it succeeds, each with one rename;
    a run the engine no longer has keeps its file. Secrets are never recorded: a left-out option is read from
    REPLAYTEST_IMPORT_<NAME> (REPLAYTEST_IMPORT_SAS_TOKEN), a Postgres password from PGPASSWORD or ~/.pgpass.
    Prints added/changed/unchanged/gone per import. Exit 0 when every import was refreshed, 2 otherwise
    (nothing of a failed import is changed)."""
    from replaytest.plugins import refresh_imports

    assert isinstance(import_group, _PluginImportGroup)
    sys.exit(refresh_imports(folder, import_group.engine_commands()))
