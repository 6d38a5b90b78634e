"""Replaying recorded Restate invocations through the SDK's state machine: green for the code that recorded
them, the right divergence at the right handler line for changed code, and never a step body run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from restate_kit import Recording, line_of
from restate_shop import orders

from replaytest.plugins.restate.replayer import NO_ARGUMENTS_NOTE, RestateReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.divergence import ReplayResult

MARKER = "RESTATE_SHOP_MARKER"


def replay(recording: Recording, role: str, *services: object) -> ReplayResult:
    path = recording.histories / f"{recording.ids[role]}.json"
    return RestateReplayer().replay(path, WorkflowSet(services or (orders.orders, orders.ledger, orders.pricing)), ReplayOptions())


def ledger_histories(recording: Recording) -> list[Path]:
    found = []
    for path in sorted(recording.histories.glob("*.json")):
        if json.loads(path.read_text())["workflow"]["type"] == "ledger/add":
            found.append(path)
    return found


@pytest.mark.parametrize("role", ["completed", "approved", "suspended", "failed"])
def test_the_code_that_recorded_the_invocation_replays_green(recording: Recording, role: str) -> None:
    result = replay(recording, role)
    assert (result.status, result.error, result.divergence) == ("passed", None, None)
    assert NO_ARGUMENTS_NOTE in result.notes


def test_virtual_object_state_reads_and_writes_replay_green(recording: Recording) -> None:
    paths = ledger_histories(recording)
    assert len(paths) == 3  # one ledger/add call per placed order
    for path in paths:
        result = RestateReplayer().replay(path, WorkflowSet((orders.ledger,)), ReplayOptions())
        assert (result.status, result.error) == ("passed", None), path


def test_run_status_is_the_invocation_status(recording: Recording) -> None:
    statuses = {role: replay(recording, role) for role in ("completed", "approved", "suspended", "failed")}
    assert {role: result.run_status for role, result in statuses.items()} == {
        "completed": "completed", "approved": "completed", "suspended": "parked", "failed": "failed",
    }
    assert statuses["suspended"].in_flight is True
    assert statuses["completed"].in_flight is False


def test_no_step_body_runs_during_replay(recording: Recording, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The marker mechanism works: recording ran the bodies and they wrote their names.
    assert {"reserve", "charge", "announce"} <= set(recording.marker.read_text().split())
    marker = tmp_path / "replayed-steps.txt"
    monkeypatch.setenv(MARKER, str(marker))
    for role in ("completed", "approved", "suspended", "failed"):
        assert replay(recording, role).status == "passed"
    assert not marker.exists(), marker.read_text()


def test_a_step_past_the_recorded_journal_is_where_replay_stops_without_running_it(
    recording: Recording, variant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    marker = tmp_path / "replayed-steps.txt"
    monkeypatch.setenv(MARKER, str(marker))
    announce = '        await ctx.run_typed("announce", lambda: _mark("announce") or approval_id)\n'
    module, path = variant(announce, announce + '        await ctx.run_typed("remind", lambda: _mark("remind") or "sent")\n')
    # The suspended invocation recorded everything up to the announcement: a resumed run would run the new
    # step for real next, so the replay stops there and passes ("reached the end of the history").
    suspended = replay(recording, "suspended", module.orders)
    assert (suspended.status, suspended.divergence) == ("passed", None)
    # The approved one completed without it: the new step is an extra command at its line.
    approved = replay(recording, "approved", module.orders).divergence
    assert approved is not None and approved.kind == "extra-command"
    assert approved.issued is not None and approved.issued.name == "remind"
    assert approved.source is not None and approved.source.line == line_of(path, '"remind"')
    assert not marker.exists(), marker.read_text()


def test_a_renamed_step_is_a_command_mismatch_at_its_line(recording: Recording, variant) -> None:  # type: ignore[no-untyped-def]
    module, path = variant('ctx.run_typed("charge"', 'ctx.run_typed("bill"')
    for role in ("completed", "suspended"):
        result = replay(recording, role, module.orders)
        divergence = result.divergence
        assert result.status == "diverged" and divergence is not None
        assert divergence.kind == "command-mismatch"
        assert (divergence.recorded.kind, divergence.recorded.name) == ("step", "charge")  # type: ignore[union-attr]
        assert (divergence.issued.kind, divergence.issued.name) == ("step", "bill")  # type: ignore[union-attr]
        assert divergence.position == 3
        assert divergence.source is not None and Path(divergence.source.path) == path
        assert divergence.source.line == line_of(path, '"bill"')


def test_an_inserted_step_is_a_command_mismatch_at_its_line(recording: Recording, variant) -> None:  # type: ignore[no-untyped-def]
    module, path = variant("    price = await ctx.service_call(", '    await ctx.run_typed("audit", reserve_stock, item=item)\n    price = await ctx.service_call(')
    result = replay(recording, "completed", module.orders)
    divergence = result.divergence
    assert divergence is not None and divergence.kind == "command-mismatch"
    assert (divergence.recorded.kind, divergence.recorded.name) == ("child-workflow", "pricing/quote")  # type: ignore[union-attr]
    assert (divergence.issued.kind, divergence.issued.name) == ("step", "audit")  # type: ignore[union-attr]
    assert divergence.source is not None and divergence.source.line == line_of(path, '"audit"')


def test_reordered_steps_are_a_command_mismatch_at_the_first_moved_line(recording: Recording, variant) -> None:  # type: ignore[no-untyped-def]
    reserve = '    reservation = await ctx.run_typed("reserve", reserve_stock, item=item)\n'
    call = "    price = await ctx.service_call(quote, arg=item)\n"
    module, path = variant(reserve + call, call + reserve)
    result = replay(recording, "suspended", module.orders)
    divergence = result.divergence
    assert divergence is not None and divergence.kind == "command-mismatch"
    assert (divergence.recorded.kind, divergence.recorded.name) == ("step", "reserve")  # type: ignore[union-attr]
    assert (divergence.issued.kind, divergence.issued.name) == ("child-workflow", "pricing/quote")  # type: ignore[union-attr]
    assert divergence.position == 1
    assert divergence.source is not None and divergence.source.line == line_of(path, "service_call(quote")


def test_a_changed_branch_diverges_where_the_paths_part(recording: Recording, variant) -> None:  # type: ignore[no-untyped-def]
    module, path = variant('if order.get("approval"):', 'if not order.get("approval"):')
    completed = replay(recording, "completed", module.orders).divergence
    assert completed is not None and completed.kind == "extra-command"
    assert (completed.issued.kind, completed.issued.name) == ("step", "announce")  # type: ignore[union-attr]
    assert completed.source is not None and completed.source.line == line_of(path, '"announce"')
    suspended = replay(recording, "suspended", module.orders).divergence
    assert suspended is not None and suspended.kind == "missing-command"
    assert (suspended.recorded.kind, suspended.recorded.name) == ("step", "announce")  # type: ignore[union-attr]


def test_a_changed_state_key_is_a_command_mismatch(recording: Recording, variant) -> None:  # type: ignore[no-untyped-def]
    module, path = variant('ctx.set("total", total)', 'ctx.set("sum", total)')
    result = RestateReplayer().replay(ledger_histories(recording)[0], WorkflowSet((module.ledger,)), ReplayOptions())
    divergence = result.divergence
    assert divergence is not None and divergence.kind == "command-mismatch"
    assert (divergence.recorded.name, divergence.issued.name) == ("set total", "set sum")  # type: ignore[union-attr]
    assert divergence.source is not None and divergence.source.line == line_of(path, 'ctx.set("sum"')


def test_a_changed_call_argument_is_an_args_mismatch(recording: Recording, variant) -> None:  # type: ignore[no-untyped-def]
    module, path = variant("service_call(quote, arg=item)", "service_call(quote, arg=item.upper())")
    divergence = replay(recording, "completed", module.orders).divergence
    assert divergence is not None and divergence.kind == "args-mismatch"
    assert divergence.issued is not None and divergence.issued.name == "pricing/quote"
    assert divergence.source is not None and divergence.source.line == line_of(path, "arg=item.upper()")


def test_another_output_is_a_result_mismatch(recording: Recording, variant) -> None:  # type: ignore[no-untyped-def]
    module, _ = variant('"verdict": verdict}', '"verdict": verdict, "version": 2}')
    result = replay(recording, "completed", module.orders)
    assert result.divergence is not None and result.divergence.kind == "result-mismatch"
    assert "version" in result.divergence.message
    # The unfinished invocation has not returned yet: its output is not compared.
    assert replay(recording, "suspended", module.orders).status == "passed"


def test_a_history_without_current_code_is_stale(recording: Recording) -> None:
    result = replay(recording, "completed", orders.ledger)
    assert result.status == "stale" and "orders/place" in str(result.error) and "ledger/add" in str(result.error)


def test_a_clock_read_in_the_handler_is_a_hazard_at_its_line(recording: Recording, variant) -> None:  # type: ignore[no-untyped-def]
    module, path = variant("    item = order[\"item\"]\n", "    item = order[\"item\"]\n    started = time.time()  # noqa: F841\n")
    module.time = __import__("time")
    result = replay(recording, "completed", module.orders)
    assert result.status == "diverged" and result.divergence is not None
    assert result.divergence.kind == "nondeterministic-call" and "time.time" in result.divergence.message
    assert result.divergence.source is not None and result.divergence.source.line == line_of(path, "time.time()")


def test_a_file_written_by_the_handler_is_stopped(recording: Recording, variant, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "written-by-the-handler.txt"
    module, path = variant("    item = order[\"item\"]\n", f"    item = order[\"item\"]\n    open({str(target)!r}, 'w').write('x')\n")
    result = replay(recording, "suspended", module.orders)
    assert result.status == "diverged" and result.divergence is not None
    assert result.divergence.kind == "nondeterministic-call"
    assert result.divergence.source is not None and result.divergence.source.line == line_of(path, "written-by-the-handler")
    assert not target.exists()


def test_a_step_still_being_retried_is_where_the_invocation_resumes(recording: Recording, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # While recording, Restate retried the failing step: its journal holds the step without a result.
    assert recording.marker.read_text().split().count("supplier") >= 1
    path = recording.histories / f"{recording.ids['retrying']}.json"
    recorded = json.loads(path.read_text())
    assert recorded["status"] == "running"
    assert [event["name"] for event in recorded["events"]] == ["reserve", "call supplier"]
    assert [entry["type"] for entry in recorded["events"][1]["journal"]] == ["Command: Run"]
    marker = tmp_path / "replayed-steps.txt"
    monkeypatch.setenv(MARKER, str(marker))
    result = replay(recording, "retrying")
    assert (result.status, result.divergence, result.run_status) == ("passed", None, "running")
    assert not marker.exists(), marker.read_text()


def test_a_finished_history_whose_step_lacks_its_result_cannot_be_replayed(recording: Recording, tmp_path: Path) -> None:
    document = json.loads((recording.histories / f"{recording.ids['completed']}.json").read_text())
    document["events"][2]["journal"] = document["events"][2]["journal"][:1]  # 'charge' without its completion
    path = tmp_path / "truncated.json"
    path.write_text(json.dumps(document))
    result = RestateReplayer().replay(path, WorkflowSet((orders.orders,)), ReplayOptions())
    assert result.status == "error" and "'charge' without its result" in str(result.error) and str(path) in str(result.error)


def test_a_workflow_waiting_on_its_durable_promise_replays(recording: Recording) -> None:
    services = (orders.signup,)
    done, waiting, confirm = (replay(recording, role, *services) for role in ("signed up", "waiting signup", "confirm"))
    assert (done.status, done.run_status) == ("passed", "completed")
    assert (waiting.status, waiting.run_status) == ("passed", "parked")
    assert (confirm.status, confirm.run_status) == ("passed", "completed")
    recorded = json.loads((recording.histories / f"{recording.ids['signed up']}.json").read_text())
    assert [(event["kind"], event["name"]) for event in recorded["events"]] == [
        ("step", "send mail"), ("signal", "promise confirmation"), ("step", "set status"),
    ]
    assert recorded["result"] == "ann@example.com confirmed with 4711" and recorded["input"]["key"] == "ann"


def test_a_renamed_promise_is_a_command_mismatch(recording: Recording, variant) -> None:  # type: ignore[no-untyped-def]
    module, path = variant('code = await ctx.promise("confirmation"', 'code = await ctx.promise("approval"')
    divergence = replay(recording, "signed up", module.signup).divergence
    assert divergence is not None and divergence.kind == "command-mismatch"
    assert (divergence.recorded.name, divergence.issued.name) == ("promise confirmation", "promise approval")  # type: ignore[union-attr]
    assert divergence.source is not None and divergence.source.line == line_of(path, 'ctx.promise("approval"')
