"""``replaytest import temporal``: fetch workflow histories from a Temporal server into JSON files.

Each run found by the visibility query becomes ``<workflow_id>_<run_id>.json`` in the output folder, in
the JSON form ``temporal workflow show --output json`` writes, so the Temporal replayer (and
temporalio's own tools) read it back as is. Each history is redacted on the way
(``temporal.redact``): ``json/plain`` payloads by key and value patterns and JSON paths, every other
string (failure messages, memo, ids) by value patterns; binary, protobuf and encrypted payloads are left
untouched and counted. The file name is built from the *redacted* workflow id, collision-free, and a
file of another run is never replaced (``import_files``): that run is refused and the import exits 2.
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from replaytest.history.redact import Redactor
    from replaytest.plugins.import_files import RunKey



@dataclass
class RedactionCount:
    """What redaction did to one history: values replaced, and payloads it could not read."""

    replaced: int = 0
    opaque_payloads: int = 0
    refused: list[str] = field(default_factory=list)  # runs not written (a file of another run is there)


def history_filename(workflow_id: str, run_id: str) -> str:
    """``<workflow_id>_<run_id>.json``, collision-free (``import_files.history_file_name``)."""
    from replaytest.plugins.import_files import history_file_name

    return history_file_name(workflow_id, run_id)


def recorded_run(document: Any) -> RunKey | None:
    """The run a Temporal history JSON records: the workflow id and original run id of its start event."""
    from replaytest.plugins.import_files import RunKey

    started = document["events"][0]["workflowExecutionStartedEventAttributes"]
    # Older servers need not repeat the workflow id in the start event; the original run id is always there.
    workflow_id, run_id = started.get("workflowId"), started["originalExecutionRunId"]
    if not isinstance(run_id, str) or not isinstance(workflow_id, (str, type(None))):
        return None
    return RunKey(("temporal", workflow_id, run_id), f"workflow {workflow_id!r} run {run_id}")


def _write_atomically(path: Path, text: str) -> None:
    # A fresh temporary name, then a rename: a fixed name such as ``<file>.partial`` planted as a link in
    # the folder would be written through.
    from replaytest.history.io import write_text_atomically

    write_text_atomically(path, text)


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

    from replaytest.plugins.import_files import ImportCollision, ImportFolder, RunKey
    from replaytest.plugins.temporal.redact import redact_temporal_document, redact_text

    client = await Client.connect(address, namespace=namespace, api_key=api_key, tls=tls)
    out.mkdir(parents=True, exist_ok=True)
    folder = ImportFolder(out, recorded_run)
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
        name = history_filename(workflow_id, execution.run_id)
        try:
            run = recorded_run(document)
        except (KeyError, TypeError, IndexError):
            run = None
        try:
            target = folder.claim(name, run or RunKey(("temporal", workflow_id, execution.run_id), f"workflow {workflow_id!r} run {execution.run_id}"))
        except ImportCollision as collision:
            totals.refused.append(str(collision))
            progress(f"refused: {collision}")
            continue
        _write_atomically(target, json.dumps(document, indent=2) + "\n")
        totals.replaced += count.replaced
        totals.opaque_payloads += count.opaque_payloads
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

    from replaytest.plugins.importing import EXIT_ERROR, fail, import_redactor, redaction_said, report_import
    from replaytest.replay.progress import Progress, wanted

    try:
        import temporalio  # noqa: F401  (fail early with the install hint, before any output)
    except ImportError:
        fail("temporalio is not installed; install replaytest[temporal]")
    redactor = import_redactor(no_redact, keys, paths)
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
        fail(f"importing from {address} namespace {namespace!r} failed: {type(error).__name__}: {error}")
    finally:
        # Free the client's native connection now; freed during interpreter finalisation it can abort the
        # process (temporalio/sdk-python#300).
        gc.collect()
    redaction = redaction_said(redactor, totals.replaced)
    if redactor is not None and totals.opaque_payloads:
        redaction += f", {totals.opaque_payloads} non-JSON payload(s) left as they are"
    report_import(written, out_dir, redaction=redaction, refused=totals.refused)
    if totals.refused:
        sys.exit(EXIT_ERROR)
