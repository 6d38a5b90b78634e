"""The activities of the insurance-claim workflow (imported into the workflow sandbox passed through)."""

from __future__ import annotations

from temporalio import activity


@activity.defn
async def assess_claim(claim: dict) -> dict:
    return {"claim": claim["id"], "estimate": round(claim["damage"] * 0.9, 2)}


@activity.defn
async def screen_fraud(claim: dict) -> str:
    return "clear" if claim["damage"] < 10_000 else "review"


@activity.defn
async def pay_claim(claim: dict, amount: float) -> str:
    return f"paid {amount:.2f} on {claim['id']}"


ACTIVITIES = [assess_claim, screen_fraud, pay_claim]
