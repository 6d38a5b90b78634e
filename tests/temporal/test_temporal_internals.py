"""replaytest reads which workflow type a class registers from temporalio's private ``_Definition``
(replaytest/plugins/temporal_internals.py). These tests pin that module to what the public decorator
declares; they run against the oldest supported temporalio too (``.ci/compat-matrix``)."""

from __future__ import annotations

from collections.abc import Sequence

from temporalio import workflow
from temporalio.common import RawValue

from replaytest.plugins.temporal_internals import workflow_definition


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
