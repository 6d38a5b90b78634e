"""``replaytest lint --watch``, as ``ruff check --watch``: lint, then lint again whenever a Python file or the
configuration under the linted paths changes, until Ctrl-C (exit 0).

Changes are seen through ``watchfiles`` (the ``watch`` extra: the operating system's notifications, with
polling where there are none), from a thread that starts watching before the first lint, so an edit made
while a lint runs is not missed. A change counts when it is to a ``.py``/``.pyi`` file that lint would walk
to (neither ``exclude`` nor a ``.gitignore`` leaves it out, matched as lint matches them:
``replaytest.path_patterns``) or to a configuration file (``pyproject.toml``, ``replaytest.toml``,
``.gitignore``, and the configuration file found above the paths). Each run clears the screen first when
stdout is a terminal; findings never end the watch, and neither does a configuration error (fix the file
and it runs again)."""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from replaytest.config import Config

MISSING_EXTRA = "--watch needs the watch extra: python -m pip install 'replaytest[watch]'"
_CONFIG_NAMES = frozenset({"pyproject.toml", "replaytest.toml", ".gitignore"})
_LINTED_SUFFIXES = (".py", ".pyi")
# How long the watching thread waits on the operating system before it looks at its stop flag again.
_WAKE_MS = 200


def watch_refusal(
    *, apply_fixes: bool, show_diff: bool, reads_stdin: bool, output_format: str, write_baseline: bool,
    output_file: bool,
) -> str | None:
    """Why ``--watch`` cannot go with the other options given, or None: each run is a report read on the
    screen, so nothing that writes files, reads stdin or makes a report for a tool."""
    if apply_fixes or show_diff:
        return (f"--watch cannot be used with {'--fix' if apply_fixes else '--diff'}: it would rewrite files as "
                "they are being edited; run `replaytest fix` when you mean to")
    if reads_stdin:
        return "--watch watches files on disk; it cannot be used with a file read from stdin (`-`, --stdin-filename)"
    if output_format != "text":
        return (f"--watch prints reports to read on the screen: --output-format {output_format} is for tools; "
                "use text")
    if write_baseline:
        return "--watch cannot be used with --write-baseline: that records the findings once; run it without --watch"
    if output_file:
        return "--watch prints each run on the screen; it cannot be used with --output-file"
    return None


class LintedChanges:
    """Which changed paths call for another lint: a configuration file, or a Python file that neither the
    configuration's ``exclude`` nor (with ``respect-gitignore``) a ``.gitignore`` leaves out, outside the cache
    folder. ``config`` is
    replaced when a run reads a changed configuration."""

    def __init__(self, config: Config, config_files: tuple[str, ...] = ()) -> None:
        self.config = config
        self.config_files = frozenset(os.path.abspath(path) for path in config_files)

    def wanted(self, path: str) -> bool:
        from replaytest.path_patterns import GitignoreRules, is_excluded

        absolute = os.path.abspath(path)
        root = os.path.abspath(self.config.root)
        cache = os.path.join(root, self.config.cache_dir)
        if absolute == cache or absolute.startswith(cache.rstrip(os.sep) + os.sep):
            return False  # what a lint writes to its cache (its .gitignore marker too) starts no other lint
        name = os.path.basename(absolute)
        if name in _CONFIG_NAMES or absolute in self.config_files:
            return True
        if not name.endswith(_LINTED_SUFFIXES):
            return False
        relative = os.path.relpath(absolute, root)
        if not relative.startswith(os.pardir) and is_excluded(relative.replace(os.sep, "/"), self.config.exclude):
            return False
        if self.config.respect_gitignore:
            folder = os.path.dirname(absolute)
            if GitignoreRules.above(folder, root).below(folder).ignored(absolute, False):
                return False
        return True


def watch_lint(lint_once: Callable[[], None], paths: tuple[Path, ...], load_config: Callable[[], Config]) -> int:
    """Run ``lint_once`` (which ends with ``sys.exit``, as the command does) now and after each change under
    ``paths``; the exit code when Ctrl-C stops it (0), or 2 when the watch cannot start."""
    try:
        import watchfiles
    except ImportError:
        click.echo(f"error: {MISSING_EXTRA}", err=True)
        return 2
    from replaytest.config import ConfigError

    targets = list(paths) or [Path(".")]
    missing = [str(path) for path in targets if not path.exists()]
    if missing:
        click.echo(f"error: --watch: no such file or folder: {', '.join(missing)}", err=True)
        return 2
    try:
        config = load_config()
    except ConfigError as error:
        click.echo(f"error: {error}", err=True)
        return 2
    roots = [str(path) for path in targets]
    if config.path is not None and not any(_under(config.path, Path(root)) for root in roots):
        roots.append(str(config.path))  # the configuration found above the paths counts too
    changes = LintedChanges(config, (str(config.path),) if config.path is not None else ())

    class _Filter(watchfiles.DefaultFilter):  # the default's ignored folders (.git, .venv, caches) and ours
        def __call__(self, change: Any, path: str) -> bool:
            return super().__call__(change, path) and changes.wanted(path)

    # Batches of changes, or the error that ended the watcher (the main thread says it and exits 2).
    seen: queue.Queue[set[tuple[Any, str]] | Exception] = queue.Queue()
    ready, stop, failed = threading.Event(), threading.Event(), threading.Event()

    def watch() -> None:
        try:
            for batch in watchfiles.watch(*roots, watch_filter=_Filter(), stop_event=stop, yield_on_timeout=True,
                                          rust_timeout=_WAKE_MS, raise_interrupt=False):
                ready.set()  # the first answer, even an empty one, means the watcher is in place
                if batch:
                    seen.put(batch)
        except Exception as error:  # the operating system refused a watch: no run may wait for it forever
            failed.set()
            seen.put(error)
        ready.set()

    watcher = threading.Thread(target=watch, name="replaytest-lint-watch", daemon=True)
    watcher.start()
    try:
        ready.wait()
        changed: list[str] = []
        while True:
            if failed.is_set():  # at the start: no run, since none would follow an edit
                return _cannot_watch(roots, seen.get())
            _run_once(lint_once, changed, targets)
            batch: set[tuple[Any, str]] = set()
            while not batch or not seen.empty():
                item = seen.get()
                if isinstance(item, Exception):
                    return _cannot_watch(roots, item)
                batch |= item
            changed = sorted({os.path.relpath(path) for _change, path in batch})
            try:
                changes.config = load_config()
            except ConfigError:
                pass  # the run says what is wrong with it; the last good exclude keeps filtering meanwhile
    except KeyboardInterrupt:
        stop.set()
        watcher.join()
        return 0


def _cannot_watch(roots: list[str], error: object) -> int:
    click.echo(f"error: --watch: cannot watch {', '.join(roots)}: {error}", err=True)
    return 2


def _run_once(lint_once: Callable[[], None], changed: list[str], targets: list[Path]) -> None:
    click.clear()  # only on a terminal
    if changed:
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        click.echo(f"replaytest: file change detected: {shown}", err=True)
    try:
        lint_once()
    except SystemExit:
        pass  # findings, or an error the run has printed: the watch goes on
    sys.stdout.flush()
    click.echo(f"replaytest: watching {', '.join(str(path) for path in targets)} for changes (Ctrl-C to stop)",
               err=True)


def _under(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True
