"""The insurance claim of ``impact_patches_claims_wf`` one retirement step on: the fraud screen kept with
its guard replaced by ``workflow.deprecate_patch("fraud-screen")`` (``InsuranceClaimDeprecated``), and with
no patch call left at all (``InsuranceClaimUnguarded``). Both are Temporal type ``InsuranceClaim``; they
live apart from the two earlier deploys so each module holds one patch call per workflow type."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from impact_patches_claims_activities import assess_claim, pay_claim, screen_fraud

_TIMEOUT = timedelta(seconds=10)


@workflow.defn(name="InsuranceClaim")
class InsuranceClaimDeprecated:
    def __init__(self) -> None:
        self.approved: bool | None = None

    @workflow.signal
    def adjuster_decision(self, approved: bool) -> None:
        self.approved = approved

    @workflow.run
    async def run(self, claim: dict) -> str:
        assessment = await workflow.execute_activity(assess_claim, claim, start_to_close_timeout=_TIMEOUT)
        workflow.deprecate_patch("fraud-screen")  # [fraud-screen deprecated]
        verdict = await workflow.execute_activity(screen_fraud, claim, start_to_close_timeout=_TIMEOUT)
        if verdict != "clear":
            return f"held {claim['id']} for review"
        await workflow.wait_condition(lambda: self.approved is not None)
        amount = assessment["estimate"] if self.approved else 0.0
        return await workflow.execute_activity(pay_claim, args=[claim, amount], start_to_close_timeout=_TIMEOUT)


@workflow.defn(name="InsuranceClaim")
class InsuranceClaimUnguarded:
    def __init__(self) -> None:
        self.approved: bool | None = None

    @workflow.signal
    def adjuster_decision(self, approved: bool) -> None:
        self.approved = approved

    @workflow.run
    async def run(self, claim: dict) -> str:
        assessment = await workflow.execute_activity(assess_claim, claim, start_to_close_timeout=_TIMEOUT)
        verdict = await workflow.execute_activity(screen_fraud, claim, start_to_close_timeout=_TIMEOUT)
        if verdict != "clear":
            return f"held {claim['id']} for review"
        await workflow.wait_condition(lambda: self.approved is not None)
        amount = assessment["estimate"] if self.approved else 0.0
        return await workflow.execute_activity(pay_claim, args=[claim, amount], start_to_close_timeout=_TIMEOUT)
