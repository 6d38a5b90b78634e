"""replaytest reads which workflow type a class registers, and its signal and update handlers, from
temporalio's private ``_Definition``, and wraps four methods of the running workflow instance
(replaytest/plugins/temporal/internals.py). These tests pin that module to what the public decorators
declare and to the instance methods' shapes; they run against the oldest supported temporalio too
(``.ci/compat-matrix``). What the wrappers report is checked by replays in test_temporal_lines.py."""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from temporalio import workflow
from temporalio.common import RawValue

from replaytest.plugins.temporal.internals import handler_function, workflow_definition, workflow_instance_class


@workflow.defn
class DefaultName:
    @workflow.run
    async def run(self) -> None:
        return None


@workflow.defn(name="Renamed")
class ExplicitName:
    @workflow.run
    async def run(self) -> None:
        return None


@workflow.defn(dynamic=True)
class Dynamic:
    @workflow.run
    async def run(self, args: Sequence[RawValue]) -> None:
        return None


class NotAWorkflow:
    async def run(self) -> None:
        return None


def test_registered_names_are_the_declared_ones() -> None:
    default, explicit = workflow_definition(DefaultName), workflow_definition(ExplicitName)

    assert (default.name, default.cls) == ("DefaultName", DefaultName)
    assert (explicit.name, explicit.cls) == ("Renamed", ExplicitName)


def test_dynamic_workflow_has_no_name() -> None:
    dynamic = workflow_definition(Dynamic)

    assert dynamic is not None and dynamic.name is None and dynamic.cls is Dynamic


def test_other_classes_have_no_definition() -> None:
    assert workflow_definition(NotAWorkflow) is None
    assert workflow_definition(int) is None


@workflow.defn(name="Inbox")
class Inbox:
    @workflow.signal
    def deliver(self, message: str) -> None:
        return None

    @workflow.signal(dynamic=True)
    def anything(self, name: str, args: Sequence[RawValue]) -> None:
        return None

    @workflow.update(name="mark-read")
    def mark_read(self, message_id: int) -> bool:
        return True

    @workflow.run
    async def run(self) -> None:
        return None


def test_handlers_are_found_by_their_declared_names() -> None:
    defn = workflow_definition(Inbox)

    assert handler_function(defn, "signal", "deliver") is Inbox.deliver
    assert handler_function(defn, "signal", None) is Inbox.anything  # the dynamic handler
    assert handler_function(defn, "signal", "unknown") is None
    assert handler_function(defn, "update", "mark-read") is Inbox.mark_read
    assert handler_function(defn, "update", "mark_read") is None  # registered under its declared name only
    assert handler_function(defn, "update", None) is None


def test_the_wrapped_instance_methods_have_the_shapes_the_wrappers_call() -> None:
    instance_class = workflow_instance_class()

    assert list(inspect.signature(instance_class._add_command).parameters) == ["self"]
    patch = inspect.signature(instance_class.workflow_patch).parameters
    assert list(patch)[:2] == ["self", "id"] and patch["deprecated"].kind is inspect.Parameter.KEYWORD_ONLY
    assert inspect.iscoroutinefunction(instance_class.workflow_wait_condition)
    assert list(inspect.signature(instance_class.activate).parameters)[:2] == ["self", "act"]
    assert list(inspect.signature(instance_class.workflow_set_signal_handler).parameters) == ["self", "name", "handler"]
    assert list(inspect.signature(instance_class.workflow_set_update_handler).parameters) == [
        "self", "name", "handler", "validator"
    ]


def test_activity_names_are_the_declared_ones() -> None:
    from temporalio import activity

    from replaytest.plugins.temporal.internals import activity_name

    @activity.defn
    async def call_model(text: str) -> str:
        return text

    @activity.defn(name="AskModel")
    def ask(text: str) -> str:
        return text

    def plain(text: str) -> str:
        return text

    assert (activity_name(call_model), activity_name(ask), activity_name(plain), activity_name(3)) == (
        "call_model", "AskModel", None, None,
    )
