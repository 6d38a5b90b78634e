"""RT104: an idempotency key made fresh inside the unit that is retried (step, retry decorator, retry loop)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replaytest.lint.model import Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import Invalid, KeyUse, Option, Rule

# Keyword arguments and dict keys that are idempotency keys by the API's own definition (AWS spells
# them in PascalCase); any key whose name contains "idempotency" counts too (Stripe's
# ``idempotency_key=``, the ``Idempotency-Key`` header). Names that merely resemble one (a bearer
# ``client_token``, a ``dedup_id`` SQL parameter) are not uses of a key.
_API_PARAMETERS = frozenset({"ClientRequestToken", "ClientToken", "MessageDeduplicationId"})
# Decorators that re-run the function on failure, and iterables whose loop is a retry loop.
_RETRY_DECORATORS = (
    "tenacity.retry", "backoff.on_exception", "backoff.on_predicate", "stamina.retry", "retry.retry",
    "retrying.retry",
)

# Spellings of key names as code writes them (a prose mention of "idempotency" in a comment is not one).
_SCREEN = (
    b"idempotency_", b"idempotency-", b"idempotencykey", b"idempotencytoken", b"idempotency=", b"idempotency\"",
    b"idempotency'", b"clientrequesttoken", b"clienttoken", b"messagededuplicationid",
)


def normalise_key(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def _spellings(name: str) -> set[str]:
    lowered = name.lower()
    return {lowered, lowered.replace("-", "_"), lowered.replace("_", "-"), normalise_key(name)}


class UsesFreshIdempotencyKey(Rule):
    """
    ## What it does
    Finds idempotency keys that differ on every attempt of the unit that is retried: a key made from
    `uuid4()`, `secrets`, the clock or `random` (directly, through a local variable or inside an
    f-string) *inside* a step or activity body (or a helper it calls), a function with a retry
    decorator (`tenacity`, `backoff`, `stamina`), or a retry loop (`while` / `for attempt in range(n)`
    that catches and tries again), and used there as an idempotency key: an `Idempotency-Key` header, a
    parameter the API defines as one (Stripe's `idempotency_key`, AWS `ClientRequestToken`, `ClientToken`,
    `MessageDeduplicationId`) or a configured name.

    A key made once and passed into the retried unit (workflow input, `workflow.uuid4()`, the workflow
    id) is the correct pattern and is not reported; neither is a key made in code nobody retries (a
    client script, a test), nor a variable that only looks like a key (`client_token` for a bearer
    token, a `dedup_id` SQL parameter).

    ## Why is this bad?
    The key exists so that a retried step is recognised as the same request. A key made fresh on each
    attempt defeats that: a retry after a timeout charges the card twice.

    ## Example
    ```python
    @activity.defn
    async def charge(order_id: str) -> None:
        stripe.PaymentIntent.create(amount=100, idempotency_key=str(uuid.uuid4()))
    ```

    ## Use instead
    ```python
    @activity.defn
    async def charge(order_id: str) -> None:
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
    retry_decorators = _RETRY_DECORATORS
    retry_iterables = ("tenacity.Retrying", "tenacity.AsyncRetrying")

    options = (
        Option("key-names", "list[str]", (), "extra keyword-argument, dict-key and header names that carry "
               "idempotency keys (matched ignoring case, '-' and '_'); also the older top-level idempotency-key-names"),
    )

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        names = self.settings["key-names"]
        self.key_names: frozenset[str] = frozenset(normalise_key(name) for name in names)
        # Configured names may be spelt with "-", "_" or neither; screen on each spelling.
        extra = {spelling.encode() for name in names for spelling in _spellings(name)}
        self.screen = _SCREEN + tuple(sorted(extra))

    def wants_key(self, name: str, how: str) -> bool:
        if name in _API_PARAMETERS:
            return True
        normal = normalise_key(name)
        return "idempotency" in normal or normal in self.key_names

    def check_key(self, use: KeyUse) -> str | None:
        return use.key

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        unit = via or effect.unit
        return (
            f"idempotency key {effect.subject} is made from {effect.qualname} inside {unit}, so every retry "
            "sends a new key; make it once outside the retried unit or derive it from stable data "
            "(workflow id and step name)"
        )

    VALID = (
        """
import stripe
from temporalio import activity

@activity.defn
async def charge(order_id: str) -> None:
    stripe.PaymentIntent.create(amount=100, idempotency_key=f"{activity.info().workflow_id}-charge")
""",
        """
import uuid
import stripe

def charge_once(order_id: str) -> None:
    stripe.PaymentIntent.create(amount=100, idempotency_key=str(uuid.uuid4()))
""",
        """
import secrets
import httpx
from dbos import DBOS

@DBOS.step()
def login() -> str:
    client_token = secrets.token_urlsafe(32)
    httpx.post("https://auth.example", json={"client_token": client_token})
    return client_token
""",
    )
    INVALID = (
        Invalid(
            """
import uuid
import stripe
from temporalio import activity

@activity.defn
async def charge(order_id: str) -> None:
    stripe.PaymentIntent.create(amount=100, idempotency_key=str(uuid.uuid4()))
""",
            line=7, column=45,
            message='idempotency key idempotency_key is made from uuid.uuid4() inside step charge, so every retry sends a new key; make it once outside the retried unit or derive it from stable data (workflow id and step name)',
        ),
        Invalid(
            """
import time
import httpx
import tenacity

@tenacity.retry(stop=tenacity.stop_after_attempt(3))
def post(order_id: str) -> None:
    key = f"{order_id}-{time.time()}"
    httpx.post("https://pay.example", headers={"Idempotency-Key": key})
""",
            line=8, column=48,
            message='idempotency key Idempotency-Key is made from time.time() inside retried function post, so every retry sends a new key; make it once outside the retried unit or derive it from stable data (workflow id and step name)',
        ),
        Invalid(
            """
import uuid
import boto3
from dbos import DBOS

@DBOS.step()
def send(body: str) -> None:
    boto3.client("sqs").send_message(QueueUrl="q", MessageBody=body, MessageDeduplicationId=uuid.uuid4().hex)
""",
            line=7, column=70,
            message='idempotency key MessageDeduplicationId is made from uuid.uuid4() inside step send, so every retry sends a new key; make it once outside the retried unit or derive it from stable data (workflow id and step name)',
        ),
    )
