"""A courier dispatcher (type ``Dispatch``) that waits on a timer, signals another workflow (``Parcel``)
and continues as new once, and changed versions of it, for the tests of the commands the expenses
workflow does not issue: an external signal and continue-as-new. The tests name the lines of this file,
so keep them where they are (new code goes at the end)."""

from __future__ import annotations

from temporalio import workflow


@workflow.defn(name="Parcel")
class Parcel:
    def __init__(self) -> None:
        self.notes: list[str] = []

    @workflow.signal
    def parcel_ready(self, note: str) -> None:
        self.notes.append(note)

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: len(self.notes) >= 2)
        return "collected after " + ", ".join(self.notes)


@workflow.defn(name="Dispatch")
class Dispatch:
    @workflow.run
    async def run(self, job: dict) -> str:
        await workflow.sleep(0.05)
        parcel = workflow.get_external_workflow_handle(job["parcel"])
        await parcel.signal("parcel_ready", f"round {job['round']}")
        if job["round"] < 1:
            workflow.continue_as_new({**job, "round": job["round"] + 1})
        return f"dispatched {job['round'] + 1} rounds"


@workflow.defn(name="Dispatch")
class DispatchSignalRenamed:
    @workflow.run
    async def run(self, job: dict) -> str:
        await workflow.sleep(0.05)
        parcel = workflow.get_external_workflow_handle(job["parcel"])
        await parcel.signal("parcel_sent", f"round {job['round']}")
        if job["round"] < 1:
            workflow.continue_as_new({**job, "round": job["round"] + 1})
        return f"dispatched {job['round'] + 1} rounds"


@workflow.defn(name="Dispatch")
class DispatchSignalFirst:
    @workflow.run
    async def run(self, job: dict) -> str:
        parcel = workflow.get_external_workflow_handle(job["parcel"])
        await parcel.signal("parcel_ready", f"round {job['round']}")
        await workflow.sleep(0.05)
        if job["round"] < 1:
            workflow.continue_as_new({**job, "round": job["round"] + 1})
        return f"dispatched {job['round'] + 1} rounds"


@workflow.defn(name="Dispatch")
class DispatchWithoutContinueAsNew:
    @workflow.run
    async def run(self, job: dict) -> str:
        await workflow.sleep(0.05)
        parcel = workflow.get_external_workflow_handle(job["parcel"])
        await parcel.signal("parcel_ready", f"round {job['round']}")
        return f"dispatched {job['round'] + 1} rounds"


@workflow.defn(name="Dispatch")
class DispatchExtraSignal:
    @workflow.run
    async def run(self, job: dict) -> str:
        await workflow.sleep(0.05)
        parcel = workflow.get_external_workflow_handle(job["parcel"])
        await parcel.signal("parcel_ready", f"round {job['round']}")
        if job["round"] < 1:
            workflow.continue_as_new({**job, "round": job["round"] + 1})
        await parcel.signal("parcel_ready", "done")
        return f"dispatched {job['round'] + 1} rounds"


@workflow.defn(name="Recall")
class Recall:
    @workflow.run
    async def run(self, parcel_id: str) -> str:
        await workflow.get_external_workflow_handle(parcel_id).cancel()
        return "recalled"


@workflow.defn(name="Recall")
class RecallWaitsInstead:
    @workflow.run
    async def run(self, parcel_id: str) -> str:
        await workflow.sleep(0.05)
        return "recalled"
