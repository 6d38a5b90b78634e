"""RT104: an idempotency key made fresh inside the unit that is retried (step, retry decorator, retry loop).

The rule's detection lives here: the batched pass calls its hooks for keyword arguments, dict keys and
item assignments (the places a key is *used*), for functions (retry decorators) and for loops (retry
loops), and asks the pass whether a value differs per attempt (``ModuleFacts.fresh_value``: made from
a clock, random or uuid call in this function). A key made in a helper is reported only when a step or
a retried function calls the helper, which resolution decides (``FunctionSummary.keys``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from replaytest.lint.model import ORCHESTRATION, STEP, Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import Invalid, Option, Rule
from replaytest.lint.syntax import call_args, calls_in, dotted_text, string_value

if TYPE_CHECKING:
    from replaytest.lint.facts import ModuleFacts

# Keyword arguments and dict keys that are idempotency keys by the API's own definition (AWS spells
# them in PascalCase); any key whose name contains "idempotency" counts too (Stripe's
# ``idempotency_key=``, the ``Idempotency-Key`` header). Names that merely resemble one (a bearer
# ``client_token``, a ``dedup_id`` SQL parameter) are not uses of a key.
_API_PARAMETERS = frozenset({"ClientRequestToken", "ClientToken", "MessageDeduplicationId"})
# Decorators that re-run the function on failure, and iterables whose loop is a retry loop.
_RETRY_DECORATORS = frozenset({
    "tenacity.retry", "backoff.on_exception", "backoff.on_predicate", "stamina.retry", "retry.retry",
    "retrying.retry",
})
_RETRY_ITERABLES = frozenset({"tenacity.Retrying", "tenacity.AsyncRetrying"})

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

    # --- detection ---------------------------------------------------------------------------

    def on_function(self, facts: ModuleFacts, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        function = facts.function
        if function is not None and any(
            facts.resolve(d.func if isinstance(d, ast.Call) else d) in _RETRY_DECORATORS for d in node.decorator_list
        ):
            function.retried = True

    def reruns_body(self, facts: ModuleFacts, node: ast.For | ast.AsyncFor | ast.While) -> bool:
        """A loop that re-sends on failure: ``while ...`` or ``for attempt in range(...)`` whose body
        catches an exception or breaks out on success. A loop over data (``for order in orders``) is not
        one: each item is its own request, and its key may rightly differ."""
        if isinstance(node, (ast.For, ast.AsyncFor)):
            iterated = facts.resolve(node.iter.func) if isinstance(node.iter, ast.Call) else None
            if iterated in _RETRY_ITERABLES:
                return True
            if iterated not in ("builtins.range", "itertools.count"):
                return False
        elif _drains(node):
            return False
        return _has_try_or_break(node.body)

    def on_call(self, facts: ModuleFacts, node: ast.Call, qualname: str | None) -> None:
        # Reported at the ``keyword`` node: its span is ``name=value``, as the finding should be.
        for keyword in node.keywords:
            if keyword.arg is not None:
                self._check(facts, keyword, keyword.arg, keyword.value, "keyword")

    def on_dict(self, facts: ModuleFacts, node: ast.Dict) -> None:
        # A ``**spread`` has no key (None). The entry's span is made only for a key name that counts.
        for key_node, value in zip(node.keys, node.values):
            key = string_value(key_node)
            if key_node is not None and key is not None and self.wants_key(key, "dict key"):
                self._check(facts, _entry(key_node, value), key, value, "dict key")

    def on_assign(self, facts: ModuleFacts, target: ast.expr, value: ast.expr | None) -> None:
        # ``headers["Idempotency-Key"] = key``; ``x["a", "b"]`` indexes with a tuple, not a string.
        if value is not None and isinstance(target, ast.Subscript):
            key = string_value(target.slice)
            if key is not None:
                self._check(facts, target, key, value, "item")

    def _check(self, facts: ModuleFacts, node: ast.AST, key: str, value: ast.expr, how: str) -> None:
        """A key is fresh per attempt only when it is made in the unit that is retried together with the
        request using it: a step's body, a retry-decorated function, a retry loop (decided here), or a
        helper of a step (decided at resolution: the function's ``keys``)."""
        function = facts.function
        if function is None or function.kind == ORCHESTRATION or not self.wants_key(key, how):
            return
        fresh = facts.fresh_value(value)
        if fresh is None:
            return
        source, level = fresh
        if function.kind == STEP:
            unit = f"step {function.name}"
        elif function.retried:
            unit = f"retried function {function.name}"
        elif function.retry_loops and level:
            unit = f"a retry loop in {function.name}"
        else:
            unit = ""
        facts.report_key(self, node, key, source, unit)

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


def _entry(key: ast.expr, value: ast.expr) -> ast.AST:
    """A position-only node spanning a dict entry ``key: value``, which ``ast`` has no node for: the finding
    covers the whole entry, as a ``name=value`` keyword's does (the pass uses a reported node only for its
    position)."""
    entry = ast.expr()
    entry.lineno, entry.col_offset = key.lineno, key.col_offset
    entry.end_lineno, entry.end_col_offset = value.end_lineno, value.end_col_offset
    return entry


# ``try ... except*`` is its own node from Python 3.11.
_TRY = (ast.Try, getattr(ast, "TryStar", ast.Try))


def _has_try_or_break(body: list[ast.stmt]) -> bool:
    """Whether a loop body (not counting nested loops and functions) has a ``try`` or a ``break``."""
    statements = list(body)
    while statements:
        statement = statements.pop()
        if isinstance(statement, (*_TRY, ast.Break)):
            return True
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            statements.extend(statement.body)
        elif isinstance(statement, ast.If):
            # ``elif`` is an ``If`` alone in ``orelse``: it is looked into in turn.
            statements.extend(statement.body)
            statements.extend(statement.orelse)
    return False


# Methods that take the next item of a queue, stack or deque.
_TAKE_METHODS = frozenset({"pop", "popleft", "get", "get_nowait"})


def _drains(loop: ast.While) -> bool:
    """``while queue: item = queue.pop() ...``: a loop that takes the next item of the container its test
    looks at handles one request per item, so it is not a retry loop even when it catches and goes on."""
    test = loop.test
    if isinstance(test, ast.Compare):
        test = test.left
    if isinstance(test, ast.Call) and dotted_text(test.func) == "len":
        args = call_args(test)
        if len(args) == 1:
            test = args[0].value
    if not isinstance(test, (ast.Name, ast.Attribute)):
        return False
    container = dotted_text(test)
    return any(
        isinstance(call.func, ast.Attribute) and call.func.attr in _TAKE_METHODS
        and dotted_text(call.func.value) == container
        for statement in loop.body for call in calls_in(statement)
    )
