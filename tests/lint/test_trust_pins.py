"""More pins for the precision and recall classes of the "lint you can trust" issue: the cases the tests in
``test_trust`` leave open (stamina and framework retry policies, loops over data that catch errors, DBOS
child workflows and handles in ``gather``, ``DBOS.run_step`` with lambdas and helpers, webhook checks,
LangChain agents, a queue-draining ``while`` loop, helpers called from a step's lambda, and a set a helper
returns used other than directly in a ``for``).

Each test writes a small project for it, marked with the fixture projects' ``# expect:`` syntax (see
``test_fixture_projects``) and linted through the command line. Every project has at least one line that
must be reported, so a file the linter skipped (its byte screen, a missed framework marker) fails the test
instead of passing it quietly.
"""

from __future__ import annotations

import pytest
from lintkit import run_replaytest
from test_fixture_projects import check_project

# --- RT104: retried units beyond tenacity/backoff and plain steps ---------------------------------


def test_stamina_and_framework_retry_policies_make_a_retried_unit(make_project) -> None:
    project = make_project({
        "app/__init__.py": "",
        "app/retried.py": """
            import uuid

            import httpx
            import stamina
            import stripe


            @stamina.retry(on=httpx.HTTPError, attempts=3)
            def refund(charge: str) -> None:
                stripe.Refund.create(charge=charge, idempotency_key=str(uuid.uuid4()))  # expect: RT104:41


            @stamina.retry(on=httpx.HTTPError, attempts=3)
            def refund_with_key(charge: str, key: str) -> None:
                stripe.Refund.create(charge=charge, idempotency_key=key)
        """,
        "app/billing.py": """
            import uuid

            import httpx
            from dbos import DBOS


            @DBOS.step(retries_allowed=True, max_attempts=5)
            def email(to: str) -> None:
                httpx.post("https://mail", json={"to": to}, headers={"Idempotency-Key": uuid.uuid4().hex})  # expect: RT104:58


            @DBOS.step(retries_allowed=True, max_attempts=5)
            def email_with_stable_key(to: str) -> None:
                httpx.post("https://mail", json={"to": to}, headers={"Idempotency-Key": f"{DBOS.workflow_id}-email"})
        """,
        "app/publishing.py": """
            import uuid

            import httpx
            from langgraph.func import task
            from langgraph.types import RetryPolicy


            @task(retry_policy=RetryPolicy(max_attempts=3))
            def publish(doc: str) -> None:
                httpx.post("https://publish", json={"doc": doc, "idempotency_key": str(uuid.uuid4())})  # expect: RT104
        """,
        "app/notify.py": """
            import uuid

            import httpx
            from replaytest.journal import RetryPolicy, workflow


            def send(to: str) -> None:
                httpx.post("https://mail", json={"to": to}, headers={"Idempotency-Key": str(uuid.uuid4())})  # expect: RT104


            @workflow(name="notify")
            def notify(ctx, to: str) -> None:
                ctx.step("send", send, to, retry=RetryPolicy(max_attempts=3))
        """,
        "app/orders.py": """
            import uuid

            import httpx
            import restate

            orders = restate.Service("orders")


            def post_order(order: str) -> None:
                httpx.post("https://orders", json={"order": order, "idempotency_key": uuid.uuid4().hex})  # expect: RT104


            @orders.handler()
            async def place(ctx: restate.Context, order: str) -> None:
                await ctx.run_typed("post", post_order, order=order)
        """,
    })
    units = {d["path"]: d["message"] for d in check_project(project, cwd=project)}
    assert "inside retried function refund," in units["app/retried.py"]
    assert "inside step email," in units["app/billing.py"]
    assert "inside step publish," in units["app/publishing.py"]
    assert "inside send, which" in units["app/notify.py"] and "runs as a step" in units["app/notify.py"]
    assert "inside post_order, which" in units["app/orders.py"] and "runs as a step" in units["app/orders.py"]


def test_a_loop_over_data_that_catches_errors_is_not_a_retry_loop(make_project) -> None:
    # Catching and moving on to the next order is not trying the same request again: each order's key
    # may rightly be new. The `range` loop below catches and tries the same charge again.
    project = make_project({"app/charges.py": """
        import uuid

        import stripe


        def charge_each(orders: list) -> None:
            for order in orders:
                try:
                    stripe.PaymentIntent.create(amount=order, idempotency_key=str(uuid.uuid4()))
                except stripe.StripeError:
                    continue


        def charge_until_accepted(amount: int) -> None:
            for attempt in range(3):
                try:
                    stripe.PaymentIntent.create(amount=amount, idempotency_key=str(uuid.uuid4()))  # expect: RT104
                    break
                except stripe.StripeError:
                    continue
    """})
    (finding,) = check_project(project, cwd=project)
    assert "inside a retry loop in charge_until_accepted" in finding["message"]


def test_a_while_loop_draining_a_queue_is_not_a_retry_loop(make_project) -> None:
    project = make_project({"app/drain.py": """
        import uuid

        import stripe


        def drain(queue: list) -> None:
            while queue:
                order = queue.pop()
                try:
                    stripe.PaymentIntent.create(amount=order, idempotency_key=str(uuid.uuid4()))
                except stripe.StripeError:
                    continue


        def charge_until_accepted(amount: int) -> None:
            while True:
                try:
                    stripe.PaymentIntent.create(amount=amount, idempotency_key=str(uuid.uuid4()))  # expect: RT104
                    break
                except stripe.StripeError:
                    continue
    """})
    check_project(project, cwd=project)


@pytest.mark.parametrize(
    "files",
    [
        pytest.param({"app/orders.py": """
            import uuid

            import httpx
            import restate

            orders = restate.Service("orders")


            def post_order(order: str) -> None:
                httpx.post("https://orders", json={"order": order, "idempotency_key": uuid.uuid4().hex})  # expect: RT104


            @orders.handler()
            async def place(ctx: restate.Context, order: str) -> None:
                await ctx.run("post", lambda: post_order(order))
        """}, id="restate-ctx-run"),
        pytest.param({"app/orders.py": """
            import uuid

            import httpx
            from dbos import DBOS


            def post_order(order: str) -> None:
                httpx.post("https://orders", json={"order": order, "idempotency_key": uuid.uuid4().hex})  # expect: RT104


            @DBOS.workflow()
            def place(order: str) -> None:
                DBOS.run_step(lambda: post_order(order))
        """}, id="dbos-run-step"),
    ],
)
def test_a_helper_called_from_a_lambda_step_is_part_of_the_retried_unit(make_project, files) -> None:
    project = make_project(files)
    check_project(project, cwd=project)


# --- DBOS: gather over child workflows and handles, sleep(0), run_step, async datasources ----------

_DBOS_GATHER = """
    import asyncio

    from dbos import DBOS


    @DBOS.step()
    async def fetch(url: str) -> str:
        return url


    @DBOS.workflow()
    async def child(url: str) -> str:
        return await fetch(url)


    @DBOS.workflow()
    async def parent(urls: list) -> list:
        direct = await asyncio.gather(*(child(url) for url in urls))
        handles = await asyncio.gather(*(DBOS.start_workflow_async(child, url) for url in urls))
        results = await asyncio.gather(*(handle.get_result() for handle in handles))
        steps = await asyncio.gather(fetch(urls[0]), fetch(urls[-1]))
        await asyncio.sleep(0)
        await asyncio.sleep(2)  # expect: RT303:11
        return [*direct, *results, *steps]
"""


def test_dbos_gather_over_child_workflows_and_handles_is_not_reported(make_project) -> None:
    project = make_project({"app/fanout.py": _DBOS_GATHER})
    (sleep,) = check_project(project, cwd=project)
    assert sleep["fix"] == {"safe": True, "replacement": "DBOS.sleep_async(2)"}


def test_fix_leaves_a_dbos_yield_alone_and_makes_the_real_sleep_durable(make_project) -> None:
    project = make_project({"app/fanout.py": _DBOS_GATHER})
    for flags in ((), ("--unsafe-fixes",)):
        run = run_replaytest("fix", *flags, "--no-cache", ".", cwd=project)
        assert run.returncode in (0, 1), run.describe()
    text = (project / "app" / "fanout.py").read_text(encoding="utf-8")
    assert "    await asyncio.sleep(0)\n" in text
    assert "    await DBOS.sleep_async(2)  # expect: RT303:11\n" in text
    assert "sleep_async(0)" not in text


def test_dbos_run_step_records_lambdas_and_makes_helpers_steps(make_project) -> None:
    project = make_project({"app/orders.py": """
        import random
        import time
        import uuid

        import httpx
        from dbos import DBOS, AsyncSQLAlchemyDatasource

        store = AsyncSQLAlchemyDatasource.create("postgresql+asyncpg://db/orders")


        @store.transaction()
        async def insert(order: str) -> float:
            return time.time()


        def post(order: str) -> None:
            httpx.post("https://orders", json={"order": order, "idempotency_key": str(uuid.uuid4())})  # expect: RT104


        @DBOS.workflow()
        def place(order: str) -> float:
            DBOS.run_step(post, order)
            stamp = DBOS.run_step(lambda: time.time())
            started = time.time()  # expect: RT101
            return stamp + started


        @DBOS.workflow()
        async def place_async(order: str) -> float:
            chance = await DBOS.run_step_async(lambda: random.random())
            return chance + await insert(order)
    """})
    key = next(d for d in check_project(project, cwd=project) if d["rule"] == "RT104")
    assert "inside post, which" in key["message"] and "runs as a step" in key["message"]


# --- messages: a webhook signature check is local computation, not network I/O ---------------------


def test_stripe_webhook_signature_checks_are_not_network_io(make_project) -> None:
    project = make_project({"app/hooks.py": """
        import stripe
        from dbos import DBOS


        @DBOS.workflow()
        def on_event(payload: str, signature: str) -> str:
            event = stripe.Webhook.construct_event(payload, signature, "whsec_test")
            stripe.WebhookSignature.verify_header(payload, signature, "whsec_test")
            customer = stripe.Customer.retrieve(event["data"]["object"]["customer"])  # expect: RT202:16
            return customer["email"]
    """})
    (network,) = check_project(project, cwd=project)
    assert network["message"].startswith("stripe.Customer.retrieve() does network I/O")


# --- recall: LangChain and LangGraph prebuilt agents ------------------------------------------------


def test_langchain_and_langgraph_agents_are_model_calls(make_project) -> None:
    project = make_project({"app/research.py": """
        from langchain.agents import AgentExecutor, create_agent, initialize_agent
        from langgraph.func import entrypoint
        from langgraph.prebuilt import create_react_agent

        graph_agent = create_react_agent("openai:gpt-4o", tools=[])


        @entrypoint()
        def research(question: str) -> str:
            reply = graph_agent.invoke({"messages": [question]})  # expect: RT201:13
            agent = create_agent("openai:gpt-4o", tools=[])
            agent.invoke({"messages": [question]})  # expect: RT201
            executor = AgentExecutor(agent=agent, tools=[])
            executor.invoke({"input": question})  # expect: RT201
            legacy = initialize_agent([], llm=None)
            legacy.invoke({"input": question})  # expect: RT201
            create_react_agent("openai:gpt-4o", tools=[]).invoke({"messages": []})  # expect: RT201:5
            return str(reply)
    """})
    check_project(project, cwd=project)


# --- recall: a set returned by a helper, used other than directly in a `for` ----------------------

_TAGS = """
    def unique_tags(items: list) -> set:
        return {item.lower() for item in items}
"""
_TAGGER = """
    from temporalio import workflow

    from app.tags import unique_tags


    @workflow.defn
    class Tagger:
        @workflow.run
        async def run(self, items: list) -> list:
            out = []
            for tag in unique_tags(items):  # expect: RT301
                out.append(tag)
            {use}
            return out
"""
@pytest.mark.parametrize(
    "use",
    [
        pytest.param("tags = unique_tags(items)\n            out.extend(tag for tag in tags)  # expect: RT301", id="bound"),
        pytest.param("out += [tag.upper() for tag in unique_tags(items)]  # expect: RT301", id="comprehension"),
        pytest.param('out.append(", ".join(unique_tags(items)))  # expect: RT301', id="join"),
        pytest.param("out.extend(list(unique_tags(items)))  # expect: RT301", id="list"),
    ],
)
def test_a_set_returned_by_a_helper_and_iterated_other_than_by_for(make_project, use: str) -> None:
    project = make_project({
        "app/__init__.py": "",
        "app/tags.py": _TAGS,
        "app/wf.py": _TAGGER.replace("{use}", use),
    })
    check_project(project, cwd=project)


def test_the_helper_set_projects_above_are_analysed(make_project) -> None:
    # The project above is analysed as a whole: without the use under test it has its `for` finding.
    project = make_project({
        "app/__init__.py": "",
        "app/tags.py": _TAGS,
        "app/wf.py": _TAGGER.replace("{use}", "pass"),
    })
    check_project(project, cwd=project)

