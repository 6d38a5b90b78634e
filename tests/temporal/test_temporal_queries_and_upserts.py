"""Query handlers, search attributes and memo against a real dev server: ``temporal_wf_tagged.Tagged`` sleeps,
upserts a search attribute and the memo, sleeps again and answers a query (asked while it runs and after it
completed); ``TaggedPatched`` upserts after a patch, beside which sdk-core records a search attribute of its
own. Each history is replayed by replaytest and by temporalio's own ``Replayer`` against the recording code
and changed versions of it: the verdicts must agree, and each divergence names its kind, both sides and the
line of ``temporal_wf_tagged.py`` that issued the command.

A query is answered outside any workflow task and leaves no event in the history, so replay never runs a query
handler and a changed, renamed or removed one cannot diverge. sdk-core matches an upsert by its position only,
not by its keys or values: a changed key or value replays green, as the SDK's own Replayer says."""

from __future__ import annotations

import asyncio
import inspect
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import temporal_wf_tagged as tagged
from temporal_devserver import running_dev_server

from replaytest.replay.report import render_text

pytestmark = [pytest.mark.temporal_server, pytest.mark.slow]

SOURCE = Path(tagged.__file__)
QUERY = "current_stage"


def line_in(cls: type, text: str, occurrence: int = 0) -> int:
    """The line of ``temporal_wf_tagged.py`` in ``cls`` that holds ``text`` (its first, or the given occurrence)."""
    lines, first = inspect.getsourcelines(cls)
    return first + [n for n, line in enumerate(lines) if text in line][occurrence]


@pytest.fixture(scope="module")
def tagged_histories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    folder = tmp_path_factory.mktemp("temporal-tagged")
    attributes = {"PackingStage": "Keyword", "PackingStation": "Keyword"}
    with running_dev_server(folder, search_attributes=attributes) as server:
        recorded = asyncio.run(_record(server.address))
    paths = {}
    for name, text in recorded.items():
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(text, encoding="utf-8")
    yield paths


async def _record(address: str) -> dict[str, str]:
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    queue = f"tagged-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=[tagged.Tagged, tagged.TaggedPatched]):
        handle = await client.start_workflow("Tagged", id=f"tagged-{uuid.uuid4()}", task_queue=queue)
        assert await handle.query(QUERY) in ("new", "packed")  # answered while the run is open
        assert await handle.result() == "tagged"
        assert await handle.query(QUERY) == "packed"  # and after it completed (the worker replays it to answer)
        described = await handle.describe()
        assert described.typed_search_attributes.get(tagged.STAGE) == "packed"
        assert await described.memo_value("note") == "packed"
        patched = await client.start_workflow("TaggedPatched", id=f"tagged-patched-{uuid.uuid4()}", task_queue=queue)
        assert await patched.result() == "tagged"
        return {"tagged": (await handle.fetch_history()).to_json(), "patched": (await patched.fetch_history()).to_json()}


def _agreed(replay, sdk_verdict, path: Path, workflow: type, expected: str):  # type: ignore[no-untyped-def]
    assert sdk_verdict(path, workflow) == expected
    result = replay(path, workflow)
    assert result.status == expected, render_text(result)
    return result


def _diverged(replay, sdk_verdict, path: Path, workflow: type):  # type: ignore[no-untyped-def]
    divergence = _agreed(replay, sdk_verdict, path, workflow, "diverged").divergence
    assert divergence.kind == "command-mismatch", divergence.message
    assert divergence.source is not None and Path(divergence.source.path).name == SOURCE.name, divergence.message
    return divergence


def test_the_recording_code_replays_green(replay, sdk_verdict, tagged_histories):
    _agreed(replay, sdk_verdict, tagged_histories["tagged"], tagged.Tagged, "passed")
    _agreed(replay, sdk_verdict, tagged_histories["patched"], tagged.TaggedPatched, "passed")


@pytest.mark.parametrize("workflow", [tagged.TaggedQueryRenamed, tagged.TaggedWithoutQuery], ids=["renamed", "removed"])
def test_a_changed_query_handler_cannot_diverge_the_history_holds_no_query(replay, sdk_verdict, tagged_histories, workflow):
    text = tagged_histories["tagged"].read_text(encoding="utf-8")
    # Two queries were answered; neither left an event or its name.
    assert QUERY not in text and not any("QUERY" in event["eventType"] for event in json.loads(text)["events"])
    _agreed(replay, sdk_verdict, tagged_histories["tagged"], workflow, "passed")


def test_a_dropped_search_attribute_upsert_is_named_at_the_command_in_its_place(replay, sdk_verdict, tagged_histories):
    divergence = _diverged(replay, sdk_verdict, tagged_histories["tagged"], tagged.TaggedWithoutSearchAttributes)
    assert divergence.recorded.kind == "search-attributes" and divergence.recorded.name == "PackingStage"
    assert divergence.issued.kind == "memo" and divergence.issued.name == "note"
    assert divergence.source.line == line_in(tagged.TaggedWithoutSearchAttributes, "upsert_memo")
    assert "upserted search attributes 'PackingStage', the code now upserts the memo 'note'" in divergence.message


def test_a_search_attribute_upsert_moved_before_the_timer_is_named_at_its_line(replay, sdk_verdict, tagged_histories):
    divergence = _diverged(replay, sdk_verdict, tagged_histories["tagged"], tagged.TaggedSearchAttributesFirst)
    assert divergence.recorded.kind == "timer" and divergence.issued.kind == "search-attributes"
    assert divergence.source.line == line_in(tagged.TaggedSearchAttributesFirst, "upsert_search_attributes")


@pytest.mark.parametrize("workflow", [tagged.TaggedOtherSearchAttribute, tagged.TaggedOtherSearchAttributeValue,
                                      tagged.TaggedOtherMemo], ids=["other-key", "other-value", "other-memo"])
def test_an_upsert_with_other_keys_or_values_replays_green_as_the_sdk_says(replay, sdk_verdict, tagged_histories, workflow):
    _agreed(replay, sdk_verdict, tagged_histories["tagged"], workflow, "passed")


def test_a_dropped_memo_upsert_is_named_at_the_timer_in_its_place(replay, sdk_verdict, tagged_histories):
    divergence = _diverged(replay, sdk_verdict, tagged_histories["tagged"], tagged.TaggedWithoutMemo)
    assert divergence.recorded.kind == "memo" and divergence.recorded.name == "note"
    assert divergence.issued.kind == "timer"
    assert divergence.source.line == line_in(tagged.TaggedWithoutMemo, "workflow.sleep(0.05)", occurrence=1)


def test_a_memo_upsert_moved_before_the_timer_is_named_at_its_line(replay, sdk_verdict, tagged_histories):
    divergence = _diverged(replay, sdk_verdict, tagged_histories["tagged"], tagged.TaggedMemoFirst)
    assert divergence.recorded.kind == "timer" and divergence.issued.kind == "memo"
    assert divergence.source.line == line_in(tagged.TaggedMemoFirst, "upsert_memo")


def test_the_search_attribute_sdk_core_records_for_a_patch_is_not_counted_as_the_codes(replay, sdk_verdict, tagged_histories):
    """The history holds two search-attribute upserts before the diverging timer's place, one of them sdk-core's
    (``TemporalChangeVersion``) beside the patch marker: the code's own upsert is still found at its line."""
    divergence = _diverged(replay, sdk_verdict, tagged_histories["patched"], tagged.TaggedPatchedUpsertFirst)
    assert divergence.issued.kind == "search-attributes" and divergence.issued.name == "PackingStage"
    assert divergence.source.line == line_in(tagged.TaggedPatchedUpsertFirst, "upsert_search_attributes")
