"""The aws-durable-execution-sdk-python names replay relies on beyond the documented API
(``replaytest/plugins/aws_durable/internals.py``), checked on the installed SDK: an upgrade that moves one
fails here, by name, rather than as a wrong replay."""

from __future__ import annotations

import json
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution, durable_step
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from replaytest.plugins.aws_durable import internals


@durable_step
def double(step_context: StepContext, value: int) -> int:
    return 2 * value


@durable_execution
def doubler(event: dict, context: DurableContext) -> int:
    return context.step(double(event["n"])) + context.step(double(1), name="one")


def test_the_installed_sdk_is_in_the_tested_range() -> None:
    assert Version(internals.sdk_version()) in SpecifierSet(internals.TESTED_VERSIONS)


def test_a_handler_is_recognised_and_unwrapped_and_nothing_else_is() -> None:
    assert internals.handler_function(doubler) is doubler.__wrapped__  # type: ignore[attr-defined]
    with_options = durable_execution(plugins=[])(doubler.__wrapped__)  # type: ignore[attr-defined]
    assert internals.handler_function(with_options) is doubler.__wrapped__  # type: ignore[attr-defined]
    assert internals.handler_function(double) is None
    assert internals.handler_function(print) is None


def _recorded(n: int, first_name: str = "double") -> list[dict[str, Any]]:
    """The checkpoints of a finished ``doubler`` execution, in the API's shape (ids by position)."""
    from aws_durable_execution_sdk_python.identifier import OperationIdNamespace

    ids = OperationIdNamespace()
    return [
        {"Id": "exec", "Type": "EXECUTION", "Status": "STARTED", "ExecutionDetails": {"InputPayload": json.dumps({"n": n})}},
        {"Id": ids.create_id_for_step(1), "Type": "STEP", "SubType": "Step", "Name": first_name, "Status": "SUCCEEDED",
         "StepDetails": {"Result": json.dumps(2 * n)}},
        {"Id": ids.create_id_for_step(2), "Type": "STEP", "SubType": "Step", "Name": "one", "Status": "SUCCEEDED",
         "StepDetails": {"Result": "2"}},
    ]


def test_every_operation_passes_the_identity_check_with_its_checkpoint_and_the_check_is_restored() -> None:
    from aws_durable_execution_sdk_python.identifier import OperationIdentifier

    original = OperationIdentifier.validate_checkpoint
    seen: list[tuple[str, str | None, str | None]] = []

    def observe(identity: internals.Identity, checkpoint: Any, validate: Any) -> None:
        validate()
        seen.append((identity.type, identity.name, internals.checkpoint_status(checkpoint)))

    with internals.watching(observe):
        output = internals.invoke(doubler.__wrapped__, "arn/exec", _recorded(5), "doubler", None)  # type: ignore[attr-defined]
    assert OperationIdentifier.validate_checkpoint is original
    assert output["Status"] == "SUCCEEDED" and json.loads(output["Result"]) == 12
    # Each operation is checked twice (the replay boundary, then as it runs), each time with its checkpoint.
    assert sorted(set(seen)) == [("STEP", "double", "SUCCEEDED"), ("STEP", "one", "SUCCEEDED")]


def test_a_changed_name_at_a_position_is_the_sdks_non_determinism() -> None:
    refusals: list[str] = []

    def observe(identity: internals.Identity, checkpoint: Any, validate: Any) -> None:
        try:
            validate()
        except internals.NonDeterministic as error:
            refusals.append(str(error))
            raise

    with internals.watching(observe):
        output = internals.invoke(doubler.__wrapped__, "arn/exec", _recorded(5, "triple"), "doubler", None)  # type: ignore[attr-defined]
    assert output["Status"] == "FAILED"
    assert refusals and "name checkpoint='triple' current='double'" in refusals[0]


def test_a_replay_polls_the_checkpoint_threads_stop_faster_and_restores_it() -> None:
    from aws_durable_execution_sdk_python import state

    before = state._STOP_SIGNAL_POLL_SECONDS
    assert isinstance(before, float) and before > internals._REPLAY_STOP_POLL_SECONDS
    seen: list[float] = []

    @durable_execution
    def probe(event: dict, context: DurableContext) -> int:
        seen.append(state._STOP_SIGNAL_POLL_SECONDS)
        return 1

    output = internals.invoke(probe.__wrapped__, "arn/exec", _recorded(1)[:1], "probe", None)  # type: ignore[attr-defined]
    assert output["Status"] == "SUCCEEDED"
    assert seen == [internals._REPLAY_STOP_POLL_SECONDS]
    assert state._STOP_SIGNAL_POLL_SECONDS == before


def test_a_waits_identity_carries_the_seconds_the_code_asks_for_and_the_wait_is_restored() -> None:
    """A wait already started is answered from its checkpoint, so its seconds reach no checkpoint call: the watch
    hands them to the identity check (None for every other operation, and outside a ``context.wait`` call)."""
    from aws_durable_execution_sdk_python.config import Duration
    from aws_durable_execution_sdk_python.identifier import OperationIdNamespace

    @durable_execution
    def cooling(event: dict, context: DurableContext) -> int:
        context.wait(Duration.from_minutes(2), name="cool_off")
        return context.step(double(1), name="one")

    original = DurableContext.wait
    wait_id = OperationIdNamespace().create_id_for_step(1)
    recorded = [_recorded(1)[0], {"Id": wait_id, "Type": "WAIT", "SubType": "Wait", "Name": "cool_off", "Status": "STARTED",
                                  "WaitDetails": {}}]
    seen: set[tuple[str, str | None, int | None, str | None]] = set()

    def observe(identity: internals.Identity, checkpoint: Any, validate: Any) -> None:
        validate()
        seen.add((identity.type, identity.name, identity.wait_seconds, internals.checkpoint_status(checkpoint)))

    with internals.watching(observe):
        output = internals.invoke(cooling.__wrapped__, "arn/exec", recorded, "cooling", None)  # type: ignore[attr-defined]
        recorded[1]["Status"] = "SUCCEEDED"
        finished = internals.invoke(cooling.__wrapped__, "arn/exec", recorded, "cooling", None)  # type: ignore[attr-defined]
    assert DurableContext.wait is original
    assert (output["Status"], finished["Status"]) == ("PENDING", "SUCCEEDED")
    assert seen == {("WAIT", "cool_off", 120, "STARTED"), ("WAIT", "cool_off", 120, "SUCCEEDED"), ("STEP", "one", None, None)}
