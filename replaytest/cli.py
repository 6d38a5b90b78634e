"""The ``replaytest`` command line (click): lint, fix, rules, replay, import, diff, redact, check.

Commands stay thin: they parse options, load configuration and plugins once, call into ``lint``,
``replay``, ``history`` or a plugin, and map the outcome to an exit code (0 clean, 1 findings or
divergences, 2 usage/configuration error or input that could not be checked).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from replaytest import __version__

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="replaytest")
def cli() -> None:
    """Keep durable-workflow orchestration code replay-safe."""


# --- lint side: lint, fix, rules ----------------------------------------------------------------


# --- replay side: replay, diff, redact ----------------------------------------------------------


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--workflows", "-w", "workflow_specs", multiple=True, metavar="MODULE:ATTR",
              help="Current code to replay against (repeatable); default [tool.replaytest.replay] workflows.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--prompts", type=click.Choice(["fail", "warn", "ignore"]),
              help="Prompt drift policy for every history status (default: fail running/parked, warn completed).")
@click.option("--strict-args", is_flag=True, default=None, help="Fail on args-mismatch instead of warning.")
@click.option("--details", is_flag=True, help="Longer reports: more context, every warning in full.")
def replay(
    paths: tuple[Path, ...], workflow_specs: tuple[str, ...], output_format: str, prompts: str | None,
    strict_args: bool | None, details: bool,
) -> None:
    """Replay history files (or folders of them) against the current code; stop each at its first divergence.

    Without PATHS the [tool.replaytest.replay] paths apply. Exit 0 all passed, 1 a divergence, 2 usage
    error, malformed history or stale history (no current code for its workflow type)."""
    import json

    from replaytest.config import ConfigError, load_config
    from replaytest.plugins import PluginError, load_plugins
    from replaytest.replay.adapter import ReplayOptions
    from replaytest.replay.report import render_text, report_data, summary_counts
    from replaytest.replay.runner import WorkflowImportError, iter_history_files, load_workflows, replay_file

    try:
        config = load_config()
        settings = config.replay
        replayers = [p.replayer for p in load_plugins(config.frameworks) if p.replayer is not None]
        if workflow_specs:
            workflows = load_workflows(workflow_specs, Path.cwd())
        else:
            workflows = load_workflows(settings.workflows, config.root)
    except (ConfigError, PluginError, WorkflowImportError) as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    targets = list(paths) or [config.root / p for p in settings.paths]
    if not targets:
        click.echo("error: no history paths given and [tool.replaytest.replay] paths is empty", err=True)
        sys.exit(EXIT_ERROR)
    options = ReplayOptions(
        prompts_running=prompts or settings.prompts_running,  # type: ignore[arg-type]
        prompts_completed=prompts or settings.prompts_completed,  # type: ignore[arg-type]
        strict_args=settings.strict_args if strict_args is None else strict_args,
        details=details,
    )
    results = [replay_file(path, replayers, workflows, options) for path in iter_history_files(targets)]
    if not results:
        click.echo(f"error: no *.json history files under {', '.join(map(str, targets))}", err=True)
        sys.exit(EXIT_ERROR)
    counts = summary_counts(results)
    if output_format == "json":
        click.echo(json.dumps(report_data(results), indent=2, ensure_ascii=False))
    else:
        for result in results:
            click.echo(render_text(result, details))
        click.echo(
            f"replayed {counts['histories']} histories: {counts['passed']} passed, {counts['diverged']} diverged, "
            f"{counts['stale']} stale, {counts['error']} error; {counts['warnings']} warning(s)"
        )
    if counts["stale"] or counts["error"]:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if counts["diverged"] else EXIT_CLEAN)


@cli.command()
@click.argument("a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--details", is_flag=True, help="Show more events of context.")
def diff(a: Path, b: Path, output_format: str, details: bool) -> None:
    """Show where two histories A and B of the same workflow part (first differing command, with context).

    Compares command streams (kind, name, arguments digest, prompt version, patch id), not results.
    Exit 0 identical command streams, 1 they differ, 2 unreadable/malformed or different workflow types."""
    import json

    from replaytest.history import HistoryError
    from replaytest.replay.diff import DiffError, diff_files
    from replaytest.replay.report import display_path, divergence_data, render_divergence

    try:
        outcome = diff_files(a, b)
    except (HistoryError, DiffError) as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        data = {
            "a": display_path(a), "b": display_path(b), "identical": outcome.identical,
            "divergence": None if outcome.divergence is None else divergence_data(outcome.divergence),
        }
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        for label, path, history in (("A", a, outcome.a), ("B", b, outcome.b)):
            click.echo(f"{label}: {display_path(path)} ({history.workflow.type} id {history.workflow.id}, "
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
    secret and contact fields)."""
    from replaytest.config import ConfigError, load_config
    from replaytest.history import DEFAULT_KEY_NAMES, HistoryError, RedactError, Redactor, redact_file

    if in_place == (out_dir is not None):
        raise click.UsageError("give exactly one of --in-place or --out DIR")
    try:
        settings = load_config().redact
        redactor = Redactor.build(
            keys or settings.key_names or DEFAULT_KEY_NAMES, paths or settings.json_paths, settings.replacement
        )
    except (ConfigError, RedactError) as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    failed = False
    for source in files:
        target = source if in_place else out_dir / source.name
        try:
            count = redact_file(source, target, redactor)
        except HistoryError as error:
            click.echo(f"error: {error}", err=True)
            failed = True
            continue
        click.echo(f"{source}: {count} value(s) redacted -> {target}")
    sys.exit(EXIT_ERROR if failed else EXIT_CLEAN)


# --- import: one subcommand per framework plugin that can fetch histories ------------------------


def main() -> None:
    try:
        cli.main(prog_name="replaytest")
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        sys.exit(130)
