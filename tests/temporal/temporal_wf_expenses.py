"""An expense-claim agent (type ``ExpenseClaim``) and changed versions of it, for the tests that check
which line of workflow code a divergence names.

``ExpenseClaim`` is the code that records the histories: it has the claim summarised (activity), runs
the policy check behind ``workflow.patched("policy-check")``, takes a note from a reviewer (update
``add_note``), waits for the decision (signal ``decide``), lets a cool-off timer run out and notifies
the claimant. Every other class registers under the same type name and changes one thing; the tests
name the lines of this file, so keep them where they are (new code goes at the end).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow

_TIMEOUT = timedelta(seconds=5)


@activity.defn
async def summarise_claim(claim: dict) -> str:
    return f"{claim['employee']} claims {claim['amount']} for {claim['purpose']}"


@activity.defn
async def check_policy(claim: dict) -> str:
    return "within policy" if claim["amount"] <= 500 else "needs a second approver"


@activity.defn
async def notify(message: str) -> str:
    return f"sent: {message}"


class _Review:
    """The reviewer's side: a decision signal and a note update, shared by every version."""

    def __init__(self) -> None:
        self.decision: str | None = None
        self.notes: list[str] = []

    @workflow.signal
    def decide(self, decision: str) -> None:
        self.decision = decision

    @workflow.update
    def add_note(self, note: str) -> int:
        self.notes.append(note)
        return len(self.notes)


@workflow.defn(name="ExpenseClaim")
class ExpenseClaim(_Review):
    @workflow.run
    async def run(self, claim: dict) -> str:
        summary = await workflow.execute_activity(summarise_claim, claim, start_to_close_timeout=_TIMEOUT)
        if workflow.patched("policy-check"):
            summary += "; " + await workflow.execute_activity(check_policy, claim, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.decision is not None and bool(self.notes))
        await asyncio.sleep(0.05)
        return await workflow.execute_activity(notify, f"{summary}: {self.decision}", start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="ExpenseClaim")
class ExpenseClaimExtraTimer(_Review):
    """Added: a workflow.sleep before the decision is awaited."""

    @workflow.run
    async def run(self, claim: dict) -> str:
        summary = await workflow.execute_activity(summarise_claim, claim, start_to_close_timeout=_TIMEOUT)
        if workflow.patched("policy-check"):
            summary += "; " + await workflow.execute_activity(check_policy, claim, start_to_close_timeout=_TIMEOUT)
        await workflow.sleep(timedelta(minutes=1))
        await workflow.wait_condition(lambda: self.decision is not None and bool(self.notes))
        await asyncio.sleep(0.05)
        return await workflow.execute_activity(notify, f"{summary}: {self.decision}", start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="ExpenseClaim")
class ExpenseClaimWithoutCoolOff(_Review):
    """Removed: the cool-off timer; the code notifies where the history started the timer."""

    @workflow.run
    async def run(self, claim: dict) -> str:
        summary = await workflow.execute_activity(summarise_claim, claim, start_to_close_timeout=_TIMEOUT)
        if workflow.patched("policy-check"):
            summary += "; " + await workflow.execute_activity(check_policy, claim, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.decision is not None and bool(self.notes))
        return await workflow.execute_activity(notify, f"{summary}: {self.decision}", start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="ExpenseClaim")
class ExpenseClaimTimerBeforeSummary(_Review):
    """Reordered: the cool-off timer now runs first, where the history summarised the claim."""

    @workflow.run
    async def run(self, claim: dict) -> str:
        await asyncio.sleep(0.05)
        summary = await workflow.execute_activity(summarise_claim, claim, start_to_close_timeout=_TIMEOUT)
        if workflow.patched("policy-check"):
            summary += "; " + await workflow.execute_activity(check_policy, claim, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.decision is not None and bool(self.notes))
        return await workflow.execute_activity(notify, f"{summary}: {self.decision}", start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="ExpenseClaim")
class ExpenseClaimPatchRemoved(_Review):
    """The patch call removed too early: the policy check runs unconditionally, without the marker."""

    @workflow.run
    async def run(self, claim: dict) -> str:
        summary = await workflow.execute_activity(summarise_claim, claim, start_to_close_timeout=_TIMEOUT)
        summary += "; " + await workflow.execute_activity(check_policy, claim, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.decision is not None and bool(self.notes))
        await asyncio.sleep(0.05)
        return await workflow.execute_activity(notify, f"{summary}: {self.decision}", start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="ExpenseClaim")
class ExpenseClaimPatchRenamed(_Review):
    """The patch id changed from ``policy-check`` to ``policy-check-2``."""

    @workflow.run
    async def run(self, claim: dict) -> str:
        summary = await workflow.execute_activity(summarise_claim, claim, start_to_close_timeout=_TIMEOUT)
        if workflow.patched("policy-check-2"):
            summary += "; " + await workflow.execute_activity(check_policy, claim, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.decision is not None and bool(self.notes))
        await asyncio.sleep(0.05)
        return await workflow.execute_activity(notify, f"{summary}: {self.decision}", start_to_close_timeout=_TIMEOUT)


class _ReviewRenamedSignal:
    """The decision signal renamed from ``decide`` to ``approve``: recorded ``decide`` signals find no handler."""

    def __init__(self) -> None:
        self.decision: str | None = None
        self.notes: list[str] = []

    @workflow.signal
    def approve(self, decision: str) -> None:
        self.decision = decision

    @workflow.update
    def add_note(self, note: str) -> int:
        self.notes.append(note)
        return len(self.notes)


@workflow.defn(name="ExpenseClaim")
class ExpenseClaimSignalRenamed(_ReviewRenamedSignal):
    @workflow.run
    async def run(self, claim: dict) -> str:
        summary = await workflow.execute_activity(summarise_claim, claim, start_to_close_timeout=_TIMEOUT)
        if workflow.patched("policy-check"):
            summary += "; " + await workflow.execute_activity(check_policy, claim, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.decision is not None and bool(self.notes))
        await asyncio.sleep(0.05)
        return await workflow.execute_activity(notify, f"{summary}: {self.decision}", start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="ExpenseClaim")
class ExpenseClaimStricterWait(_Review):
    """The wait condition changed: it now also wants an "approved" decision, which the recorded signal
    ("rejected") does not give, so the code keeps waiting where the history went on."""

    @workflow.run
    async def run(self, claim: dict) -> str:
        summary = await workflow.execute_activity(summarise_claim, claim, start_to_close_timeout=_TIMEOUT)
        if workflow.patched("policy-check"):
            summary += "; " + await workflow.execute_activity(check_policy, claim, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.decision == "approved" and bool(self.notes))
        await asyncio.sleep(0.05)
        return await workflow.execute_activity(notify, f"{summary}: {self.decision}", start_to_close_timeout=_TIMEOUT)


class _ReviewWithoutNotes:
    """The note update removed: recorded ``add_note`` updates find no handler."""

    def __init__(self) -> None:
        self.decision: str | None = None
        self.notes: list[str] = []

    @workflow.signal
    def decide(self, decision: str) -> None:
        self.decision = decision


@workflow.defn(name="ExpenseClaim")
class ExpenseClaimUpdateRemoved(_ReviewWithoutNotes):
    @workflow.run
    async def run(self, claim: dict) -> str:
        summary = await workflow.execute_activity(summarise_claim, claim, start_to_close_timeout=_TIMEOUT)
        if workflow.patched("policy-check"):
            summary += "; " + await workflow.execute_activity(check_policy, claim, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.decision is not None)
        await asyncio.sleep(0.05)
        return await workflow.execute_activity(notify, f"{summary}: {self.decision}", start_to_close_timeout=_TIMEOUT)


class _ReviewTimedNotes(_Review):
    """The note update now sleeps before it answers: a timer the history does not have."""

    @workflow.update
    async def add_note(self, note: str) -> int:
        await workflow.sleep(timedelta(seconds=30))
        self.notes.append(note)
        return len(self.notes)


@workflow.defn(name="ExpenseClaim")
class ExpenseClaimUpdateSleeps(_ReviewTimedNotes):
    @workflow.run
    async def run(self, claim: dict) -> str:
        summary = await workflow.execute_activity(summarise_claim, claim, start_to_close_timeout=_TIMEOUT)
        if workflow.patched("policy-check"):
            summary += "; " + await workflow.execute_activity(check_policy, claim, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.decision is not None and bool(self.notes))
        await asyncio.sleep(0.05)
        return await workflow.execute_activity(notify, f"{summary}: {self.decision}", start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="ExpenseClaim")
class ExpenseClaimHandlerSetAtRunTime:
    """The decision handler is set at run time (``workflow.set_signal_handler``) rather than declared,
    and the wait wants an approval the recorded decision ("rejected") does not give."""

    def __init__(self) -> None:
        self.decision: str | None = None
        self.notes: list[str] = []

    @workflow.update
    def add_note(self, note: str) -> int:
        self.notes.append(note)
        return len(self.notes)

    def record_decision(self, decision: str) -> None:
        self.decision = decision

    @workflow.run
    async def run(self, claim: dict) -> str:
        workflow.set_signal_handler("decide", self.record_decision)
        summary = await workflow.execute_activity(summarise_claim, claim, start_to_close_timeout=_TIMEOUT)
        if workflow.patched("policy-check"):
            summary += "; " + await workflow.execute_activity(check_policy, claim, start_to_close_timeout=_TIMEOUT)
        await workflow.wait_condition(lambda: self.decision == "approved" and bool(self.notes))
        await asyncio.sleep(0.05)
        return await workflow.execute_activity(notify, f"{summary}: {self.decision}", start_to_close_timeout=_TIMEOUT)
