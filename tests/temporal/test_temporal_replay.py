"""Replaying the recorded Temporal histories against current code: passes, each kind of change, the report."""

from __future__ import annotations

import pytest
import temporal_wf_hello as hello
import temporal_wf_patched as patched
import temporal_wf_sayhello as sayhello

from replaytest.plugins.temporal.replayer import TemporalReplayConfig
from replaytest.replay.report import render_text

COMMAND_KINDS = {"command-mismatch", "extra-command", "missing-command"}
# The line of temporal_wf_hello.py whose asyncio.sleep starts the timer each class issues at its divergence.
TIMER_LINES = {"HelloTimerFirst": 46, "HelloWithoutFirstActivity": 79, "HelloExtraTimer": 113}


def test_complete_2022_history_passes(replay):
    result = replay("test_replayer_complete_history.json", sayhello.SayHelloWorkflow)
    assert result.status == "passed", render_text(result)
    assert result.workflow_type == "SayHelloWorkflow"
    assert result.events == 11
    assert result.engine == "temporal"


def test_nondeterministic_2022_history_reports_the_timer_the_code_adds(replay):
    result = replay("test_replayer_nondeterministic_history.json", sayhello.SayHelloWorkflow)
    assert result.status == "diverged"
    divergence = result.divergence
    # The code starts a timer (only while replaying) where the history completed the workflow.
    assert divergence.kind == "extra-command"
    assert divergence.kind in COMMAND_KINDS
    assert divergence.position == 11
    assert divergence.recorded.kind == "complete"
    assert divergence.recorded.detail["event_type"] == "WorkflowExecutionCompleted"
    assert divergence.issued.kind == "timer"
    # sdk-core does not say which line started the timer; the trace of the replayed instance does:
    # the asyncio.sleep the code runs only while replaying, not the run method.
    assert divergence.source.path.endswith("temporal_wf_sayhello.py")
    assert divergence.source.line == 38
    text = render_text(result)
    assert "history event 11 completed the workflow, the code now starts a timer" in text
    assert "line unknown" not in text


def test_modern_hello_timer_history_passes(replay):
    result = replay("hello_timer_history.json", hello.Hello)
    assert result.status == "passed", render_text(result)
    assert result.workflow_id == "hello-1"
    assert result.events == 22


@pytest.mark.parametrize(
    ("workflow", "kind", "position", "recorded", "issued"),
    [
        # reordered: a timer where the history scheduled activity `say`
        (hello.HelloTimerFirst, "command-mismatch", 5, ("activity", "say"), ("timer", "")),
        # renamed: `shout` where the history scheduled `say` (detected thanks to core flag 1)
        (hello.HelloRenamedFirst, "command-mismatch", 5, ("activity", "say"), ("activity", "shout")),
        (hello.HelloRenamedSecond, "command-mismatch", 16, ("activity", "say"), ("activity", "shout")),
        # dropped: each of the three commands in turn
        (hello.HelloWithoutFirstActivity, "command-mismatch", 5, ("activity", "say"), ("timer", "")),
        (hello.HelloWithoutTimer, "command-mismatch", 11, ("timer", "1"), ("activity", "say")),
        (hello.HelloWithoutSecondActivity, "missing-command", 16, ("activity", "say"), ("complete", "")),
        # added: a timer after the last activity, where the history completed
        (hello.HelloExtraTimer, "extra-command", 22, ("complete", ""), ("timer", "")),
    ],
)
def test_changed_hello_workflow_is_reported_with_event_and_both_sides(replay, workflow, kind, position, recorded, issued):
    result = replay("hello_timer_history.json", workflow)
    assert result.status == "diverged", render_text(result)
    divergence = result.divergence
    assert divergence.kind == kind
    assert divergence.position == position
    assert (divergence.recorded.kind, divergence.recorded.name) == recorded
    assert divergence.recorded.position == position
    assert (divergence.issued.kind, divergence.issued.name) == issued
    text = render_text(result)
    if issued[0] == "activity":
        # The trace points at the call that scheduled the activity.
        assert divergence.source.function == f"{workflow.__qualname__}.run"
        line = open(divergence.source.path, encoding="utf-8").read().splitlines()[divergence.source.line - 1]
        assert f"execute_activity({issued[1]}," in line
    elif issued[0] == "timer":
        # The trace of the replayed instance names the asyncio.sleep that started the timer.
        assert divergence.source.path.endswith("temporal_wf_hello.py")
        assert divergence.source.line == TIMER_LINES[workflow.__name__]
        assert "line unknown" not in text
    else:
        # The workflow's completion is issued by no line of its own: unknown, never a guess.
        assert divergence.source is None
        assert "line unknown" in text
    assert f"at event #{position}" in text
    assert f"history event {position} " in text
    # The history's commands around the failure are shown from the history itself.
    assert any(view.position == position for view in divergence.recorded_context)


def test_report_reads_like_the_history(replay):
    text = render_text(replay("hello_timer_history.json", hello.HelloTimerFirst))
    assert "history event 5 scheduled activity 'say', the code now starts a timer" in text
    assert "temporal_wf_hello.py:46" in text
    text = render_text(replay("hello_timer_history.json", hello.HelloRenamedSecond))
    assert "history event 16 scheduled activity 'say', the code now schedules activity 'shout'" in text


def test_recorded_context_lists_history_commands_in_order(replay):
    divergence = replay("hello_timer_history.json", hello.HelloWithoutTimer).divergence
    context = [(view.position, view.kind, view.name) for view in divergence.recorded_context]
    assert context == [(5, "activity", "say"), (11, "timer", "1"), (16, "activity", "say"), (22, "complete", "")]
    # What the code issued: the commands before the failure (they matched the history), then its own.
    issued = [(view.position, view.kind, view.name) for view in divergence.issued_context]
    assert issued == [(5, "activity", "say"), (11, "activity", "say")]
    timer = divergence.recorded
    assert timer.detail["duration"] == "0.100s"
    assert timer.detail["event_type"] == "TimerStarted"


def test_wall_clock_read_is_a_nondeterministic_call_naming_the_call(replay):
    result = replay("hello_timer_history.json", hello.HelloReadsClock)
    assert result.status == "diverged"
    divergence = result.divergence
    assert divergence.kind == "nondeterministic-call"
    assert divergence.issued.name == "datetime.datetime.now"
    assert "datetime.datetime.now" in divergence.message
    # Points at the line that reads the clock, not just the run method.
    assert divergence.source.path.endswith("temporal_wf_hello.py")
    source_lines = open(divergence.source.path, encoding="utf-8").read().splitlines()
    assert "datetime.now()" in source_lines[divergence.source.line - 1]


def test_workflow_failure_the_history_did_not_have_is_a_result_mismatch(replay):
    result = replay("hello_timer_history.json", hello.HelloFailsAtEnd)
    assert result.divergence.kind == "result-mismatch"
    assert result.divergence.position == 22
    assert result.divergence.recorded.kind == "complete"
    assert result.divergence.issued.kind == "fail"


def test_exception_in_workflow_code_is_a_result_mismatch_at_the_raising_line(replay):
    result = replay("hello_timer_history.json", hello.HelloRaisesBug)
    assert result.status == "diverged"
    divergence = result.divergence
    assert divergence.kind == "result-mismatch"
    assert "KeyError" in divergence.issued.name
    assert divergence.source.path.endswith("temporal_wf_hello.py")
    assert '["key"]' in open(divergence.source.path, encoding="utf-8").read().splitlines()[divergence.source.line - 1]


@pytest.mark.parametrize("workflow", [patched.PatchedV2, patched.PatchedV3Deprecated])
def test_patch_marker_history_replays_against_patched_and_deprecated_code(replay, workflow):
    result = replay("patched_v2_history.json", workflow)
    assert result.status == "passed", render_text(result)


@pytest.mark.parametrize("workflow", [patched.PatchedV1, patched.PatchedV2])
def test_pre_patch_history_replays_against_the_patched_code(replay, workflow):
    result = replay("patched_v1_history.json", workflow)
    assert result.status == "passed", render_text(result)


@pytest.mark.parametrize("workflow", [patched.PatchRemovedTooEarly, patched.PatchRenamed, patched.PatchedV1])
def test_removing_a_still_needed_patch_is_a_patch_mismatch(replay, workflow):
    result = replay("patched_v2_history.json", workflow)
    assert result.status == "diverged"
    divergence = result.divergence
    assert divergence.kind == "patch-mismatch"
    assert divergence.position == 5
    assert divergence.recorded.kind == "patch"
    assert divergence.recorded.detail["patch_id"] == "v2"
    assert "workflow.patched('v2')" in divergence.message
    assert "patch 'v2'" in render_text(result)


def test_deprecated_patch_code_cannot_replay_pre_patch_history(replay):
    # Deprecating too early is caught too: the pre-patch run had no timer.
    result = replay("patched_v1_history.json", patched.PatchedV3Deprecated)
    assert result.divergence.kind == "command-mismatch"
    assert result.divergence.recorded.name == "say"


def test_unregistered_workflow_type_is_stale_not_a_crash(replay):
    result = replay("hello_timer_history.json", sayhello.SayHelloWorkflow)
    assert result.status == "stale"
    assert "'Hello'" in result.error
    assert "SayHelloWorkflow" in result.error


def test_workflow_set_shapes_config_lists_and_modules(replay):
    config = TemporalReplayConfig(workflows=[hello.Hello])
    assert replay("hello_timer_history.json", config).status == "passed"
    assert replay("hello_timer_history.json", [sayhello.SayHelloWorkflow, hello.Hello]).status == "passed"
    # A module contributes the workflow classes it defines.
    assert replay("test_replayer_complete_history.json", sayhello).status == "passed"
    # Objects of other engines are ignored, not errors.
    assert replay("hello_timer_history.json", object(), "text", hello.Hello).status == "passed"


def test_replay_uses_the_configured_data_converter(replay):
    import dataclasses

    import temporalio.converter

    # A converter that cannot decode JSON payloads: replay must go through it, and say so.
    converter = dataclasses.replace(
        temporalio.converter.DataConverter.default,
        payload_converter_class=_BinaryOnlyPayloadConverter,
    )
    result = replay("hello_timer_history.json", TemporalReplayConfig(workflows=[hello.Hello], data_converter=converter))
    # Not a divergence of the code: the replay could not decode the recorded input.
    assert result.status == "error"
    assert "decoding" in result.error
    # The hint points at the converter that was configured, not at the default one.
    assert "the configured data converter cannot decode it" in result.error


class _BinaryOnlyPayloadConverter:
    """Payload converter that only knows binary/plain (module level so the data converter can build it)."""

    def __new__(cls):  # type: ignore[no-untyped-def]
        import temporalio.converter

        return temporalio.converter.CompositePayloadConverter(temporalio.converter.BinaryPlainPayloadConverter())


def test_same_replayer_serves_many_histories_in_any_order(replay):
    outcomes = [
        replay(name, workflow).status
        for name, workflow in [
            ("hello_timer_history.json", hello.Hello),
            ("hello_timer_history.json", hello.HelloTimerFirst),
            ("hello_timer_history.json", hello.Hello),
            ("test_replayer_complete_history.json", sayhello.SayHelloWorkflow),
            ("test_replayer_nondeterministic_history.json", sayhello.SayHelloWorkflow),
            ("test_replayer_complete_history.json", sayhello.SayHelloWorkflow),
        ]
    ]
    assert outcomes == ["passed", "diverged", "passed", "passed", "diverged", "passed"]


def test_unreadable_history_is_an_error(replay, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"events": [{"eventId": "1", "eventType": "EVENT_TYPE_WORKFLOW_EXEC', encoding="utf-8")
    result = replay(broken, hello.Hello)
    assert result.status == "error"
    assert "broken.json" in result.error


def test_history_that_never_reached_a_worker_passes(replay, histories, tmp_path):
    import json

    document = json.loads((histories / "hello_timer_history.json").read_text(encoding="utf-8"))
    document["events"] = document["events"][:2]
    path = tmp_path / "just_started.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = replay(path, hello.Hello)
    assert result.status == "passed"
    assert result.events == 2


def test_replay_runs_the_configured_interceptors(replay):
    from temporalio import worker

    seen: list[str] = []

    class Inbound(worker.WorkflowInboundInterceptor):
        async def execute_workflow(self, input):  # type: ignore[no-untyped-def]
            seen.append(input.type.__name__)
            return await super().execute_workflow(input)

    class Interceptor(worker.Interceptor):
        def workflow_interceptor_class(self, input):  # type: ignore[no-untyped-def]
            return Inbound

    config = TemporalReplayConfig(workflows=[hello.Hello], interceptors=[Interceptor()])
    assert replay("hello_timer_history.json", config).status == "passed"
    assert seen == ["Hello"]


def test_open_replayers_are_reused_per_class_set_and_bounded(histories):
    from replaytest.plugins.temporal.replayer import MAX_OPEN_SESSIONS, TemporalReplayer
    from replaytest.replay.adapter import ReplayOptions, WorkflowSet

    replayer = TemporalReplayer()
    path = histories / "hello_timer_history.json"
    try:
        for _ in range(3):  # a new WorkflowSet of the same class each time, as the replay_history fixture makes
            assert replayer.replay(path, WorkflowSet((hello.Hello,)), ReplayOptions()).status == "passed"
        assert len(replayer._sessions) == 1
        variants = [hello.HelloTimerFirst, hello.HelloRenamedFirst, hello.HelloRenamedSecond, hello.HelloWithoutTimer,
                    hello.HelloWithoutFirstActivity, hello.HelloWithoutSecondActivity, hello.HelloExtraTimer,
                    hello.HelloFailsAtEnd, hello.Hello]
        for workflow in variants:
            assert replayer.replay(path, WorkflowSet((workflow,)), ReplayOptions()).status in ("passed", "diverged")
        assert len(replayer._sessions) <= MAX_OPEN_SESSIONS
    finally:
        replayer.close()
    assert not replayer._sessions


def test_dynamic_workflow_takes_types_without_a_class(replay):
    assert replay("hello_timer_history.json", hello.AnyWorkflow).status == "passed"
    # A registered class wins over the dynamic one.
    result = replay("hello_timer_history.json", hello.AnyWorkflow, hello.HelloTimerFirst)
    assert result.status == "diverged"


def test_replay_applies_the_configured_worker_plugins(replay):
    from temporalio import worker
    from temporalio.plugin import SimplePlugin

    seen: list[str] = []

    class Inbound(worker.WorkflowInboundInterceptor):
        async def execute_workflow(self, input):  # type: ignore[no-untyped-def]
            seen.append("plugin interceptor")
            return await super().execute_workflow(input)

    class Interceptor(worker.Interceptor):
        def workflow_interceptor_class(self, input):  # type: ignore[no-untyped-def]
            return Inbound

    config = TemporalReplayConfig(workflows=[hello.Hello], plugins=[SimplePlugin("replay-test", interceptors=[Interceptor()])])
    assert replay("hello_timer_history.json", config).status == "passed"
    assert seen == ["plugin interceptor"]


@pytest.mark.slow
def test_processes_that_replayed_divergences_exit_cleanly():
    # Replayers are kept open between histories; left to interpreter finalisation their native parts
    # aborted about one exit in four. Several processes at once make a regression show up reliably.
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; import temporal_wf_hello as h\n"
        "from replaytest.plugins.temporal.replayer import TemporalReplayer\n"
        "from replaytest.replay.adapter import ReplayOptions, WorkflowSet\n"
        "r = TemporalReplayer()\n"
        "for cls in (h.Hello, h.HelloRenamedSecond, h.HelloReadsClock, h.HelloWithoutTimer, h.HelloTimerFirst):\n"
        "    r.replay(Path(sys.argv[1]) / 'histories' / 'hello_timer_history.json', WorkflowSet((cls,)), ReplayOptions())\n"
    )
    processes = [
        subprocess.Popen([sys.executable, "-c", code, str(here)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(6)
    ]
    outcomes = [(process.wait(timeout=120), process.stderr.read().decode(errors="replace")[-300:]) for process in processes]
    for process in processes:
        process.stderr.close()
    assert [code for code, _ in outcomes] == [0] * 6, outcomes
