"""The Temporal replayer's patch decisions on the shared patch histories (``tests/temporal/histories``):
``patched_v1_history.json`` was recorded before ``workflow.patched("v2")`` existed, ``patched_v2_history.json``
with it (its ``core_patch`` marker is event 5)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest
import temporal_wf_patched as patched

from replaytest.plugins.temporal.replayer import TemporalReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet

HISTORIES = Path(__file__).resolve().parent.parent / "temporal" / "histories"


@pytest.fixture(scope="module")
def replayer() -> Iterator[TemporalReplayer]:
    replayer = TemporalReplayer()
    yield replayer
    replayer.close()


def _line(cls: type, text: str) -> int:
    lines, first = inspect.getsourcelines(cls)
    [offset] = [index for index, line in enumerate(lines) if text in line]
    return first + offset


def _decisions(replayer: TemporalReplayer, history: str, cls: type) -> list[tuple]:
    result = replayer.replay(HISTORIES / history, WorkflowSet((cls,)), ReplayOptions())
    assert result.status == "passed", result.divergence or result.error
    return [
        (d.patch_id, d.taken, d.deprecated, d.marker_deprecated, d.position, d.source.line if d.source else None)
        for d in result.patch_decisions
    ]


def test_a_history_with_the_marker_takes_the_new_path_at_its_event(replayer: TemporalReplayer) -> None:
    line = _line(patched.PatchedV2, 'if workflow.patched("v2"):')
    assert _decisions(replayer, "patched_v2_history.json", patched.PatchedV2) == [("v2", True, False, False, 5, line)]


def test_a_history_from_before_the_patch_takes_the_old_path(replayer: TemporalReplayer) -> None:
    line = _line(patched.PatchedV2, 'if workflow.patched("v2"):')
    assert _decisions(replayer, "patched_v1_history.json", patched.PatchedV2) == [("v2", False, False, None, None, line)]


def test_deprecate_patch_consumes_the_marker(replayer: TemporalReplayer) -> None:
    line = _line(patched.PatchedV3Deprecated, 'workflow.deprecate_patch("v2")')
    assert _decisions(replayer, "patched_v2_history.json", patched.PatchedV3Deprecated) == [("v2", True, True, False, 5, line)]


def test_the_run_start_is_the_started_event_s_time_to_the_microsecond(replayer: TemporalReplayer) -> None:
    result = replayer.replay(HISTORIES / "patched_v2_history.json", WorkflowSet((patched.PatchedV2,)), ReplayOptions())
    assert result.run_started_at == "2026-11-30T05:15:11.388511Z"  # the file has 05:15:11.388511192Z
