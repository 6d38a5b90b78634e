"""RT104: an idempotency or deduplication key that is fresh on every attempt (checked everywhere)."""

from __future__ import annotations

from collections.abc import Sequence

from replaytest.lint.model import Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import KeyUse, Rule

_KEY_NAMES = (
    "idempotency_key", "idempotency-key", "idempotencykey", "idempotency_token", "client_token",
    "clienttoken", "clientrequesttoken", "client_request_token", "dedup_id", "dedupe_id",
    "deduplication_id", "deduplicationid", "messagededuplicationid", "message_deduplication_id",
    "request_id_for_idempotency", "x-idempotency-key",
)


# Spellings of key names as code writes them (a prose mention of "idempotency" in a comment is not one).
_SCREEN = (
    b"idempotency_", b"idempotency-", b"idempotencykey", b"idempotencytoken", b"idempotency=", b"idempotency\"",
    b"idempotency'", b"client_token", b"clienttoken", b"client-token", b"clientrequesttoken", b"client_request_token",
    b"dedup_id", b"dedupe_id", b"dedup-id", b"deduplication_id", b"deduplicationid", b"deduplication-id",
)


def normalise_key(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def _spellings(name: str) -> set[str]:
    lowered = name.lower()
    return {lowered, lowered.replace("-", "_"), lowered.replace("_", "-"), normalise_key(name)}


class UsesFreshIdempotencyKey(Rule):
    """
    ## What it does
    Finds idempotency and deduplication keys (`idempotency_key=`, `"Idempotency-Key"` headers,
    `ClientRequestToken`, `MessageDeduplicationId`, `dedup_id`, ...) whose value comes from `uuid4()`,
    `secrets`, the clock or `random`, directly, through a local variable or inside an f-string. It is
    checked in every function, steps and activities included.

    ## Why is this bad?
    The key exists so that a retried step is recognised as the same request. A key made fresh on each
    attempt defeats that: a retry after a timeout charges the card twice.

    ## Example
    ```python
    stripe.PaymentIntent.create(amount=100, idempotency_key=str(uuid.uuid4()))
    ```

    ## Use instead
    ```python
    info = activity.info()
    stripe.PaymentIntent.create(amount=100, idempotency_key=f"{info.workflow_id}-charge")
    ```
    """

    code = "RT104"
    name = "uses-fresh-idempotency-key"
    category = "idempotency-key"
    summary = "Idempotency key that differs on every attempt"
    what = "makes an idempotency key that differs on every attempt"
    # Values are fresh per attempt when they come from a finding of these categories.
    taint_categories = ("clock", "random", "uuid")

    def __init__(self) -> None:
        self.key_names = frozenset(normalise_key(name) for name in _KEY_NAMES)
        self.screen = _SCREEN

    def configure(self, *, idempotency_key_names: Sequence[str], model_calls: Sequence[str]) -> None:
        self.key_names = self.key_names | {normalise_key(name) for name in idempotency_key_names}
        # Configured names may be spelt with "-", "_" or neither; screen on each spelling.
        extra = {spelling.encode() for name in idempotency_key_names for spelling in _spellings(name)}
        self.screen = _SCREEN + tuple(sorted(extra))

    def wants_key(self, name: str) -> bool:
        normal = normalise_key(name)
        return normal in self.key_names or "idempotency" in normal

    def check_key(self, use: KeyUse) -> str | None:
        return use.key if self.wants_key(use.key) else None

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        return (
            f"idempotency key {effect.subject} is made from {effect.qualname}, which differs on every attempt; "
            "derive it from stable data such as the workflow id and step name"
        )

    VALID = (
        """
import stripe
from temporalio import activity

@activity.defn
async def charge(order_id: str) -> None:
    stripe.PaymentIntent.create(amount=100, idempotency_key=f"{activity.info().workflow_id}-charge")
""",
    )
    INVALID = (
        """
import uuid
import stripe
from temporalio import activity

@activity.defn
async def charge(order_id: str) -> None:
    stripe.PaymentIntent.create(amount=100, idempotency_key=str(uuid.uuid4()))
""",
        """
import time
import httpx

def post(order_id: str) -> None:
    key = f"{order_id}-{time.time()}"
    httpx.post("https://pay.example", headers={"Idempotency-Key": key})
""",
        """
import uuid
import boto3

def send(body: str) -> None:
    boto3.client("sqs").send_message(QueueUrl="q", MessageBody=body, MessageDeduplicationId=uuid.uuid4().hex)
""",
    )
