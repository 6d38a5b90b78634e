"""Detecting Temporal history files by content and reading them without temporalio."""

from __future__ import annotations

import json

import pytest

from replaytest.plugins.temporal import PLUGIN
from replaytest.plugins.temporal.history import command_views, event_type, sniff_temporal_json


@pytest.mark.parametrize(
    "name", ["hello_timer_history.json", "test_replayer_complete_history.json", "patched_v2_history.json"]
)
def test_sniff_accepts_both_event_type_spellings(histories, name):
    head = (histories / name).read_bytes()[:65536]
    assert sniff_temporal_json(head)
    assert PLUGIN.replayer.sniff(head)


def test_sniff_accepts_a_head_cut_inside_a_large_input():
    huge = {"events": [{"eventId": "1", "eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED",
                        "workflowExecutionStartedEventAttributes": {"input": {"payloads": [{"data": "A" * 100_000}]}}}]}
    assert sniff_temporal_json(json.dumps(huge, indent=2).encode()[:65536])


@pytest.mark.parametrize(
    "head",
    [
        b'{"format": "replaytest-history", "format_version": 1, "events": [{"seq": 1, "kind": "step"}]}',
        b'{"events": [{"eventType": "ActivityTaskScheduled"}]}',
        b'{"eventType": "WorkflowExecutionStarted"}',
        b"not json at all",
        b"",
    ],
)
def test_sniff_rejects_other_files(head):
    assert not sniff_temporal_json(head)


def test_event_type_spellings_normalise_to_core_names():
    assert event_type({"eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"}) == "WorkflowExecutionStarted"
    assert event_type({"eventType": "ActivityTaskScheduled"}) == "ActivityTaskScheduled"


def test_command_views_name_what_the_history_did(histories):
    events = json.loads((histories / "patched_v2_history.json").read_text())["events"]
    views = [(v.position, v.kind, v.detail.get("patch_id", v.name)) for v in command_views(events)]
    assert views == [(5, "patch", "v2"), (6, "search-attributes", "TemporalChangeVersion"), (7, "timer", "1"), (12, "activity", "say"),
                     (18, "complete", "")]


def test_plugin_module_does_not_import_temporalio():
    # temporalio is an optional extra: loading the plugins (for lint, say) must not need it.
    import subprocess
    import sys

    code = "import sys, replaytest.plugins.temporal as t; assert t.PLUGIN.replayer; print('temporalio' in sys.modules)"
    outcome = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert outcome.stdout.strip() == "False", outcome.stderr
