"""A packing workflow (type ``Tagged``) that labels its run with a search attribute (``upsert_search_attributes``)
and a memo (``upsert_memo``) between two timers and answers a query, and changed versions of it, for the
tests of the constructs that only mark the run: search attributes, memo and query handlers. The tests name
the lines of this file, so keep them where they are (new code goes at the end)."""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributeKey

STAGE = SearchAttributeKey.for_keyword("PackingStage")
# The other key of the dev server the tests start (``--search-attribute``).
STATION = SearchAttributeKey.for_keyword("PackingStation")


@workflow.defn(name="Tagged")
class Tagged:
    def __init__(self) -> None:
        self.stage = "new"

    @workflow.query
    def current_stage(self) -> str:
        return self.stage

    @workflow.run
    async def run(self) -> str:
        await workflow.sleep(0.05)
        self.stage = "packed"
        workflow.upsert_search_attributes([STAGE.value_set("packed")])
        workflow.upsert_memo({"note": "packed"})
        await workflow.sleep(0.05)
        return "tagged"


@workflow.defn(name="Tagged")
class TaggedQueryRenamed:
    def __init__(self) -> None:
        self.stage = "new"

    @workflow.query
    def stage_now(self) -> str:
        return self.stage

    @workflow.run
    async def run(self) -> str:
        await workflow.sleep(0.05)
        self.stage = "packed"
        workflow.upsert_search_attributes([STAGE.value_set("packed")])
        workflow.upsert_memo({"note": "packed"})
        await workflow.sleep(0.05)
        return "tagged"


@workflow.defn(name="Tagged")
class TaggedWithoutQuery:
    @workflow.run
    async def run(self) -> str:
        await workflow.sleep(0.05)
        workflow.upsert_search_attributes([STAGE.value_set("packed")])
        workflow.upsert_memo({"note": "packed"})
        await workflow.sleep(0.05)
        return "tagged"


@workflow.defn(name="Tagged")
class TaggedWithoutSearchAttributes:
    @workflow.run
    async def run(self) -> str:
        await workflow.sleep(0.05)
        workflow.upsert_memo({"note": "packed"})
        await workflow.sleep(0.05)
        return "tagged"


@workflow.defn(name="Tagged")
class TaggedSearchAttributesFirst:
    @workflow.run
    async def run(self) -> str:
        workflow.upsert_search_attributes([STAGE.value_set("packed")])
        await workflow.sleep(0.05)
        workflow.upsert_memo({"note": "packed"})
        await workflow.sleep(0.05)
        return "tagged"


@workflow.defn(name="Tagged")
class TaggedOtherSearchAttribute:
    @workflow.run
    async def run(self) -> str:
        await workflow.sleep(0.05)
        workflow.upsert_search_attributes([STATION.value_set("packed")])
        workflow.upsert_memo({"note": "packed"})
        await workflow.sleep(0.05)
        return "tagged"


@workflow.defn(name="Tagged")
class TaggedOtherSearchAttributeValue:
    @workflow.run
    async def run(self) -> str:
        await workflow.sleep(0.05)
        workflow.upsert_search_attributes([STAGE.value_set("boxed")])
        workflow.upsert_memo({"note": "packed"})
        await workflow.sleep(0.05)
        return "tagged"


@workflow.defn(name="Tagged")
class TaggedWithoutMemo:
    @workflow.run
    async def run(self) -> str:
        await workflow.sleep(0.05)
        workflow.upsert_search_attributes([STAGE.value_set("packed")])
        await workflow.sleep(0.05)
        return "tagged"


@workflow.defn(name="Tagged")
class TaggedMemoFirst:
    @workflow.run
    async def run(self) -> str:
        workflow.upsert_memo({"note": "packed"})
        await workflow.sleep(0.05)
        workflow.upsert_search_attributes([STAGE.value_set("packed")])
        await workflow.sleep(0.05)
        return "tagged"


@workflow.defn(name="Tagged")
class TaggedOtherMemo:
    @workflow.run
    async def run(self) -> str:
        await workflow.sleep(0.05)
        workflow.upsert_search_attributes([STAGE.value_set("packed")])
        workflow.upsert_memo({"label": "boxed"})
        await workflow.sleep(0.05)
        return "tagged"


@workflow.defn(name="TaggedPatched")
class TaggedPatched:
    """Patched: sdk-core records a search attribute of its own (``TemporalChangeVersion``) beside the marker."""

    @workflow.run
    async def run(self) -> str:
        if workflow.patched("weigh-first"):
            await workflow.sleep(0.05)
        workflow.upsert_search_attributes([STAGE.value_set("weighed")])
        await workflow.sleep(0.05)
        return "tagged"


@workflow.defn(name="TaggedPatched")
class TaggedPatchedUpsertFirst:
    @workflow.run
    async def run(self) -> str:
        if workflow.patched("weigh-first"):
            workflow.upsert_search_attributes([STAGE.value_set("weighed")])
            await workflow.sleep(0.05)
        await workflow.sleep(0.05)
        return "tagged"
