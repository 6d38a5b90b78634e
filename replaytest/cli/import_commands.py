"""``replaytest import``: one subcommand per installed framework plugin that can fetch histories, loaded
only when ``import`` runs."""

from __future__ import annotations

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
        return sorted(self._plugins())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        from replaytest.plugins import PluginError

        plugin = self._plugins().get(cmd_name)
        if plugin is None:
            return None
        try:
            return plugin.load_import_command()  # type: ignore[no-any-return]
        except PluginError as error:
            raise click.ClickException(str(error)) from error


@cli.group("import", cls=_PluginImportGroup)
def import_group() -> None:
    """Fetch histories from a workflow engine into files for replay (one subcommand per framework)."""
