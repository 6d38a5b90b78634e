"""``replaytest import temporal``: fetch workflow histories from a Temporal server into JSON files.

Each run found by the visibility query becomes ``<workflow_id>_<run_id>.json`` in the output folder, in
the JSON form ``temporal workflow show --output json`` writes, so the Temporal replayer (and
temporalio's own tools) read it back as is. Each history is redacted on the way
(``temporal_redact``): ``json/plain`` payloads by key and value patterns and JSON paths, every other
string (failure messages, memo, ids) by value patterns; binary, protobuf and encrypted payloads are left
untouched and counted. The file name is built from the *redacted* workflow id.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from replaytest.history.redact import Redactor

_EXIT_ERROR = 2
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class RedactionCount:
    """What redaction did to one history: values replaced, and payloads it could not read."""

    replaced: int = 0
    opaque_payloads: int = 0


def history_filename(workflow_id: str, run_id: str) -> str:
    """``<workflow_id>_<run_id>.json`` with characters unsafe in file names replaced by ``_``."""
    return f"{_UNSAFE_FILENAME.sub('_', workflow_id)}_{_UNSAFE_FILENAME.sub('_', run_id)}.json"


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


async def import_histories(
    *,
    address: str,
    namespace: str,
    query: str | None,
    out: Path,
    limit: int | None,
    redactor: Redactor | None,
    api_key: str | None = None,
    tls: bool = False,
    progress: Callable[[str], None] = lambda line: None,
) -> tuple[int, RedactionCount]:
    """Fetch the histories of the runs ``query`` lists and write them into ``out``; returns how many
    were written and the redaction totals."""
    from temporalio.client import Client

    from replaytest.plugins.temporal_redact import redact_temporal_document, redact_text

    client = await Client.connect(address, namespace=namespace, api_key=api_key, tls=tls)
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    totals = RedactionCount()
    async for execution in client.list_workflows(query or None, limit=limit):
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        history = await handle.fetch_history()
        document = json.loads(history.to_json())
        count = RedactionCount()
        workflow_id = execution.id
        if redactor is not None:
            # Every string of the history (failures, memo, ids), not only payloads; the file name is
            # built from the redacted workflow id, with the document's pseudonyms.
            document, outcome = redact_temporal_document(document, redactor)
            count = RedactionCount(outcome.replaced, outcome.opaque_payloads)
            workflow_id = redact_text(execution.id, outcome)
            totals.replaced += count.replaced
            totals.opaque_payloads += count.opaque_payloads
        name = history_filename(workflow_id, execution.run_id)
        _write_atomically(out / name, json.dumps(document, indent=2) + "\n")
        written += 1
        of = f"/{limit}" if limit else ""
        redacted = f", {count.replaced} value(s) redacted" if count.replaced else ""
        progress(f"[{written}{of}] {name} ({len(document.get('events', []))} events{redacted})")
    return written, totals


@click.command("temporal")
@click.option("--address", default="localhost:7233", show_default=True, help="Temporal frontend HOST:PORT.")
@click.option("--namespace", default="default", show_default=True)
@click.option("--query", default="", help="Visibility query selecting the runs, e.g. \"WorkflowType='Order' AND ExecutionStatus='Completed'\".")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder for the history files.")
@click.option("--limit", type=click.IntRange(min=1), help="Import at most N runs.")
@click.option("--redact-key", "keys", multiple=True, metavar="NAME", help="Key name to scrub in payloads (repeatable; default: [tool.replaytest.redact] or common secret fields).")
@click.option("--redact-path", "paths", multiple=True, metavar="JSONPATH", help="JSON path to scrub inside each payload, $ being the payload (repeatable).")
@click.option("--no-redact", is_flag=True, help="Write payloads as the server returns them.")
@click.option("--api-key", envvar="TEMPORAL_API_KEY", help="API key (Temporal Cloud); also read from TEMPORAL_API_KEY.")
@click.option("--tls", is_flag=True, help="Connect with TLS.")
@click.option("--quiet", "-q", is_flag=True, help="No progress (it shows only on a terminal).")
def import_command(
    address: str,
    namespace: str,
    query: str,
    out_dir: Path,
    limit: int | None,
    keys: tuple[str, ...],
    paths: tuple[str, ...],
    no_redact: bool,
    api_key: str | None,
    tls: bool,
    quiet: bool,
) -> None:
    """Fetch Temporal workflow histories into OUT as <workflow_id>_<run_id>.json, payloads redacted."""
    # Imported here, not at module level: every lint run loads this plugin, and only this command needs them.
    import asyncio

    from replaytest.config import ConfigError, load_config
    from replaytest.history.redact import RedactError, Redactor
    from replaytest.replay.progress import Progress, wanted

    try:
        import temporalio  # noqa: F401  (fail early with the install hint, before any output)
    except ImportError:
        click.echo("error: temporalio is not installed; install replaytest[temporal]", err=True)
        sys.exit(_EXIT_ERROR)
    redactor = None
    if not no_redact:
        try:
            settings = load_config().redact
            redactor = Redactor.configured(settings, keys, paths)
        except (ConfigError, RedactError) as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(_EXIT_ERROR)
    bar = Progress("importing", wanted(quiet))
    counted = 0

    def advance(_line: str) -> None:
        nonlocal counted
        counted += 1
        bar.update(counted, limit)

    try:
        with bar:
            written, totals = asyncio.run(
                import_histories(
                    address=address, namespace=namespace, query=query, out=out_dir, limit=limit, redactor=redactor,
                    api_key=api_key, tls=tls, progress=advance,
                )
            )
    except Exception as error:  # connection refused, bad query, permission: say which and stop
        click.echo(f"error: importing from {address} namespace {namespace!r} failed: {type(error).__name__}: {error}", err=True)
        sys.exit(_EXIT_ERROR)
    finally:
        # Free the client's native connection now; freed during interpreter finalisation it can abort the
        # process (temporalio/sdk-python#300).
        gc.collect()
    redaction = "not redacted" if redactor is None else f"{totals.replaced} value(s) redacted"
    if redactor is not None and totals.opaque_payloads:
        redaction += f", {totals.opaque_payloads} non-JSON payload(s) left as they are"
    click.echo(f"imported {written} histor{'y' if written == 1 else 'ies'} into {out_dir} ({redaction})")
