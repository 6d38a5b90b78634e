"""``replaytest clean``: delete the cache folder replaytest made."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from replaytest.cli.shared import EXIT_ERROR, _safe, cli


@cli.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Configuration file to read instead of the one found (replaytest.toml or pyproject.toml).")
def clean(config_path: Path | None) -> None:
    """Delete the cache folder (cache-dir, default .replaytest_cache under the project root): lint summaries,
    green replays and replay-coverage data. Only a folder replaytest made (its README marker) is deleted.

    Exit 0 deleted or nothing to delete, 2 a configuration error or a folder that is not replaytest's."""
    from replaytest import cachedir
    from replaytest.config import ConfigError, load_config

    try:
        config = load_config(Path.cwd(), explicit=config_path)
        folder = config.root / config.cache_dir
        removed = cachedir.remove(folder)
    except (ConfigError, cachedir.CacheDirError) as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    except OSError as error:
        click.echo(f"error: cannot delete {_safe(str(folder))}: {error.strerror or error}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(f"removed {_safe(str(folder))}" if removed else f"nothing to remove: {_safe(str(folder))} does not exist")
