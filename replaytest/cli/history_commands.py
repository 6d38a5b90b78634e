"""Commands on history files themselves: ``replaytest diff`` (where two histories part) and
``replaytest redact`` (scrub secrets and personal data from them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from replaytest.cli.shared import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, _json_report, _safe, cli

if TYPE_CHECKING:
    from replaytest.history.model import History
    from replaytest.history.redact import RedactedFile


@cli.command()
@click.argument("a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--details", is_flag=True, help="Show more events of context.")
@click.option("--ignore-args", is_flag=True, help="Compare decisions only (runs on different inputs part where their paths part).")
def diff(a: Path, b: Path, output_format: str, details: bool, ignore_args: bool) -> None:
    """Show where two histories A and B of the same workflow part (first differing command, with context).

    Compares command streams (kind, name, arguments digest, prompt version, patch id), not results.
    Exit 0 identical command streams, 1 they differ, 2 unreadable/malformed or different workflow types."""

    from replaytest.history import HistoryError, load_history
    from replaytest.plugins import load_plugins
    from replaytest.replay.diff import DiffError, diff_histories
    from replaytest.replay.report import display_path, divergence_data, render_divergence
    from replaytest.replay.runner import read_head

    readers = [p for p in load_plugins() if p.history_reader is not None and p.replayer is not None]

    def read(path: Path) -> History:
        # Engine formats (Temporal JSON) are read by their plugin; neutral histories here.
        head = read_head(path)
        plugin = next((p for p in readers if p.replayer is not None and p.replayer.sniff(head)), None)
        return plugin.read_history(path) if plugin is not None else load_history(path)

    try:
        outcome = diff_histories(read(a), read(b), compare_args=not ignore_args)
    except OSError as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    except (HistoryError, DiffError) as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        data = {
            "a": display_path(a), "b": display_path(b), "identical": outcome.identical,
            "divergence": None if outcome.divergence is None else divergence_data(outcome.divergence),
        }
        click.echo(_json_report(data))
    else:
        for label, path, history in (("A", a, outcome.a), ("B", b, outcome.b)):
            click.echo(f"{label}: {_safe(display_path(path))} ({_safe(history.workflow.type)} id {_safe(history.workflow.id)}, "
                       f"{history.status}, {len(history.events)} events)")
        if outcome.divergence is None:
            click.echo("identical command streams")
        else:
            click.echo(render_divergence(outcome.divergence, details, labels=("A", "B")))
    sys.exit(EXIT_CLEAN if outcome.identical else EXIT_FINDINGS)



@cli.command()
@click.option("--key", "keys", multiple=True, metavar="NAME", help="Key name to scrub anywhere in payloads (repeatable).")
@click.option("--path", "paths", multiple=True, metavar="JSONPATH", help="JSON path to scrub, e.g. $.input.customer.email (repeatable).")
@click.option("--in-place", is_flag=True, help="Rewrite each history file.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), help="Write redacted copies into DIR.")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def redact(keys: tuple[str, ...], paths: tuple[str, ...], in_place: bool, out_dir: Path | None, files: tuple[Path, ...]) -> None:
    """Scrub secrets and personal data from history FILES, keeping argument digests so they still replay.

    Without --key/--path the [tool.replaytest.redact] settings apply (key names default to common
    secret and contact fields). A redacted result stored as a blob is written under its new hash; with
    --in-place the old blob is deleted unless another file of the folder still names it (then it is kept
    and the output says which file)."""
    from replaytest.config import ConfigError, load_config
    from replaytest.history import HistoryError, RedactError, Redactor
    from replaytest.history.redact import RedactedFile, redact_file_report

    if in_place == (out_dir is not None):
        raise click.UsageError("give exactly one of --in-place or --out DIR")
    if out_dir is not None and len({source.name for source in files}) < len(files):
        raise click.UsageError("--out DIR would write two FILES with the same name to one place; redact them separately")
    try:
        settings = load_config().redact
        redactor = Redactor.configured(settings, keys, paths)
    except (ConfigError, RedactError) as error:
        click.echo(f"error: {_safe(str(error))}", err=True)
        sys.exit(EXIT_ERROR)
    failed = False
    from replaytest.plugins import load_plugins
    from replaytest.replay.runner import read_head

    # Engine formats (Temporal JSON) are redacted by their plugin; neutral histories here.
    engine_redactors = [p for p in load_plugins() if p.history_redactor is not None and p.replayer is not None]

    for source in files:
        target = source if out_dir is None else out_dir / source.name
        try:
            if out_dir is not None:
                out_dir.mkdir(parents=True, exist_ok=True)
            head = read_head(source)
            plugin = next((p for p in engine_redactors if p.replayer is not None and p.replayer.sniff(head)), None)
            if plugin is not None:
                report = RedactedFile(plugin.redact_history_file(source, target, redactor))
            else:
                report = redact_file_report(source, target, redactor)
        except OSError as error:
            click.echo(f"error: {_safe(str(source))}: {error.strerror or error}", err=True)
            failed = True
            continue
        except HistoryError as error:
            click.echo(f"error: {_safe(str(error))}", err=True)
            failed = True
            continue
        click.echo(f"{_safe(str(source))}: {report.replaced} value(s) redacted -> {_safe(str(target))}")
        _say_blobs(report, target)
    sys.exit(EXIT_ERROR if failed else EXIT_CLEAN)


def _say_blobs(report: RedactedFile, target: Path) -> None:
    """What ``redact --in-place`` did with the blobs that held values before redaction."""
    blobs = report.blobs
    for ref in blobs.removed:
        click.echo(f"  removed blob {ref} (it held the value before redaction)")
    for ref, paths in blobs.kept.items():
        others = [path for path in paths if path.resolve() != target.resolve()]
        if others:
            # A blob shared by hundreds of histories: name a few, count the rest.
            named = ", ".join(_safe(str(path)) for path in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            which = "that history is" if len(others) == 1 else "those histories are"
            click.echo(f"  kept blob {ref}: still named by {named}, so it holds the value before redaction "
                       f"until {which} redacted too")
    if blobs.unreadable and blobs.kept:
        click.echo(f"  kept {len(blobs.kept)} blob(s) holding values before redaction: "
                   f"{_safe(str(blobs.unreadable[0]))} cannot be read and may name them")
