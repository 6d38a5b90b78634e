"""Precision and recall classes found by linting real public durable-workflow code (issue "lint you can
trust"), each pinned on a small project written for the test, plus the whole-program walk's order
independence.

Expected findings are marked on their lines with ``# expect: RT101`` (``# expect: RT101 via`` when reached
through a helper; the syntax of ``test_fixture_projects``, read strictly and compared exactly by
``assert_marks``); every other line must stay quiet.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_engine_resolution import assert_marks, lint, write

from replaytest.config import Config
from replaytest.lint.engine import build_context
from replaytest.lint.model import CallSite, Effect, FunctionSummary, ModuleSummary, Span
from replaytest.lint.resolve import Program
from replaytest.plugins import load_plugins

PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]
TEMPORAL = next(profile for profile in PROFILES if profile.name == "temporal")


# --- the whole-program walk does not depend on the order entry points are resolved in -------------


def _cycle_program(tmp_path: Path) -> Program:
    """``a() -> b() -> a()`` with a clock read in ``a`` (summaries built by hand, no parse)."""
    span = Span(1, 1, 1, 2)
    clock = Effect("RT101", "clock", "time.time()", "time.time", span)
    module = ModuleSummary(
        module="app.helpers",
        path="app/helpers.py",
        functions={
            "a": FunctionSummary("a", effects=(clock,), calls=(CallSite("app.helpers.b", span, "b()"),)),
            "b": FunctionSummary("b", calls=(CallSite("app.helpers.a", span, "a()"),)),
        },
    )
    config = Config(root=tmp_path)
    program = Program(build_context(config, PROFILES), lambda name: None)
    program.add(module)
    return program


@pytest.mark.parametrize("first", ["a", "b"])
def test_cycle_results_do_not_depend_on_which_entry_is_resolved_first(tmp_path: Path, first: str) -> None:
    program = _cycle_program(tmp_path)
    span = Span(1, 1, 1, 2)
    second = "b" if first == "a" else "a"
    reached = {}
    for name in (first, second):
        found, _ = program.call_effects(CallSite(f"app.helpers.{name}", span, f"{name}()"), TEMPORAL)
        reached[name] = [(item.effect.qualname, item.chain) for item in found]
    assert reached["a"] == [("time.time", ("app.helpers.a", "time.time"))]
    assert reached["b"] == [("time.time", ("app.helpers.b", "app.helpers.a", "time.time"))]


@pytest.mark.parametrize("order", ["a_first", "b_first"])
def test_workflows_calling_into_a_cycle_are_reported_whatever_the_file_order(tmp_path: Path, order: str) -> None:
    via_a = """
        from temporalio import workflow
        from app.helpers import a

        @workflow.defn
        class ViaA:
            @workflow.run
            async def run(self) -> None:
                a()  # expect: RT101 via
    """
    # Both reach the clock read in ``a``: one finding (first call site), naming the other workflow.
    via_b = via_a.replace("import a", "import b").replace("ViaA", "ViaB").replace("  a()  # expect: RT101 via", "  b()")
    # Files are resolved in path order: the first file's workflow walks the cycle first.
    first, second = ("w1.py", "w2.py") if order == "a_first" else ("w2.py", "w1.py")
    write(tmp_path, {
        "app/__init__.py": "",
        "app/helpers.py": """
            import time

            def a(n=3):
                if n:
                    b(n - 1)
                return time.time()

            def b(n):
                return a(n)
        """,
        f"app/{first}": via_a,
        f"app/{second}": via_b,
    })
    if order == "b_first":  # w1.py holds ViaB: its call site is the first one, so it carries the finding
        write(tmp_path, {"app/w1.py": via_b.replace("  b()", "  b()  # expect: RT101 via"), "app/w2.py": via_a.replace(
            "  a()  # expect: RT101 via", "  a()")})
    (finding,) = assert_marks(tmp_path)
    other = "app.w2.ViaB.run" if order == "a_first" else "app.w2.ViaA.run"
    assert finding.message.endswith(f"(also reached from 1 other call site, in {other})")


def test_a_dense_cycle_is_walked_in_reasonable_time(tmp_path: Path) -> None:
    """Every function of a 30-function cycle calls every other: partial results are reused within the walk."""
    span = Span(1, 1, 1, 2)
    names = [f"f{i}" for i in range(30)]
    clock = Effect("RT101", "clock", "time.time()", "time.time", span)
    functions = {
        name: FunctionSummary(
            name, effects=(clock,) if name == "f29" else (),
            calls=tuple(CallSite(f"app.m.{other}", span, f"{other}()") for other in names if other != name),
        )
        for name in names
    }
    program = Program(build_context(Config(root=tmp_path), PROFILES), lambda name: None)
    program.add(ModuleSummary(module="app.m", path="app/m.py", functions=functions))
    for name in names:
        found, _ = program.call_effects(CallSite(f"app.m.{name}", span, f"{name}()"), TEMPORAL)
        assert [item.effect.qualname for item in found] == ["time.time"], name


# --- RT104: fresh per attempt of the retried unit, matched by use -------------------------------


def test_keys_made_inside_steps_activities_and_retry_constructs(tmp_path: Path) -> None:
    write(tmp_path, {"payments.py": """
        import secrets
        import time
        import uuid

        import backoff
        import httpx
        import stripe
        import tenacity
        from dbos import DBOS
        from temporalio import activity

        @activity.defn
        async def charge(order_id: str) -> None:
            key = f"{order_id}-{uuid.uuid4()}"
            httpx.post("https://pay", headers={"Idempotency-Key": key})  # expect: RT104
            stripe.PaymentIntent.create(amount=1, idempotency_key=secrets.token_hex(8))  # expect: RT104

        @DBOS.step()
        def queue_message(sqs, body: str) -> None:
            sqs.send_message(QueueUrl="q", MessageBody=body, MessageDeduplicationId=uuid.uuid4().hex)  # expect: RT104

        @tenacity.retry(stop=tenacity.stop_after_attempt(3))
        def create_stack(cloudformation, name: str) -> None:
            cloudformation.create_stack(StackName=name, ClientRequestToken=str(time.time()))  # expect: RT104

        @backoff.on_exception(backoff.expo, httpx.HTTPError)
        def notify(order_id: str) -> None:
            headers = {}
            headers["Idempotency-Key"] = str(uuid.uuid4())  # expect: RT104
            httpx.post("https://notify", headers=headers)

        def resend_until_accepted(order_id: str) -> None:
            for attempt in range(5):
                key = str(uuid.uuid4())
                try:
                    httpx.post("https://pay", headers={"Idempotency-Key": key})  # expect: RT104
                    break
                except httpx.HTTPError:
                    continue

        def retry_with_tenacity_loop(order_id: str) -> None:
            for attempt in tenacity.Retrying(stop=tenacity.stop_after_attempt(3)):
                with attempt:
                    stripe.Refund.create(charge=order_id, idempotency_key=str(uuid.uuid4()))  # expect: RT104
    """})
    assert_marks(tmp_path)


def test_keys_made_once_outside_the_retried_unit_are_not_reported(tmp_path: Path) -> None:
    write(tmp_path, {"client.py": """
        import uuid

        import httpx
        import stripe
        from temporalio import activity, workflow

        def start_order(client, order_id: str):
            # A client call nobody retries: a fresh key per call is what the API wants.
            return stripe.PaymentIntent.create(amount=1, idempotency_key=str(uuid.uuid4()))

        def resend_with_one_key(order_id: str) -> None:
            key = str(uuid.uuid4())  # made once, reused by every attempt: correct
            for attempt in range(5):
                try:
                    httpx.post("https://pay", headers={"Idempotency-Key": key})
                    break
                except httpx.HTTPError:
                    continue

        def charge_each(orders: list) -> None:
            for order in orders:  # a loop over data, not a retry: each order is its own request
                stripe.PaymentIntent.create(amount=order, idempotency_key=str(uuid.uuid4()))

        @activity.defn
        async def charge(order_id: str, key: str) -> None:
            stripe.PaymentIntent.create(amount=1, idempotency_key=key)

        @workflow.defn
        class Order:
            @workflow.run
            async def run(self, order_id: str) -> None:
                await workflow.execute_activity(charge, args=[order_id, str(workflow.uuid4())])

        def test_charge() -> None:
            stripe.PaymentIntent.create(amount=1, idempotency_key=str(uuid.uuid4()))
    """})
    assert_marks(tmp_path)


def test_names_that_only_look_like_keys_are_not_keys(tmp_path: Path) -> None:
    write(tmp_path, {"steps.py": """
        import secrets
        import uuid

        import httpx
        from dbos import DBOS

        @DBOS.step()
        def login(user: str) -> str:
            client_token = secrets.token_urlsafe(32)  # a bearer token
            httpx.post("https://auth", json={"client_token": client_token})
            httpx.get("https://api", headers={"Authorization": f"Bearer {client_token}"})
            return client_token

        @DBOS.step()
        def record(db, event: str) -> None:
            db.execute("INSERT INTO events VALUES (:dedup_id, :event)", {"dedup_id": str(uuid.uuid4()), "event": event})
            db.execute("INSERT INTO sessions VALUES (:id)", {"session_token": secrets.token_hex(8)})

        # The one real key here. Without it no byte of the file passes RT104's screen, the file is not
        # analysed, and the names above would be quiet whatever the rule thought of them.
        @DBOS.step()
        def charge(order_id: str) -> None:
            httpx.post("https://pay", headers={"Idempotency-Key": str(uuid.uuid4())})  # expect: RT104
    """})
    assert_marks(tmp_path)


def test_a_key_made_in_a_helper_is_reported_when_a_step_calls_it(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/billing_api.py": """
            import uuid
            import stripe

            def create_charge(customer: str, amount: int):
                return stripe.Charge.create(customer=customer, amount=amount, idempotency_key=uuid.uuid4().hex)  # expect: RT104

            def create_refund(charge: str):
                return stripe.Refund.create(charge=charge, idempotency_key=uuid.uuid4().hex)
        """,
        "app/activities.py": """
            from temporalio import activity
            from app import billing_api

            def _charge(customer: str) -> None:
                billing_api.create_charge(customer, 100)

            @activity.defn
            async def charge(customer: str) -> None:
                _charge(customer)
        """,
        "app/admin.py": """
            from app.billing_api import create_refund

            def refund_by_hand(charge: str) -> None:
                create_refund(charge)  # an operator's one-off call: not retried
        """,
    })
    diagnostics = assert_marks(tmp_path)
    (finding,) = diagnostics
    assert "create_charge, called from step charge" in finding.message


# --- DBOS precision -------------------------------------------------------------------------------


def test_dbos_gather_yield_datasource_transactions_and_run_step(tmp_path: Path) -> None:
    write(tmp_path, {"app.py": """
        import asyncio
        import os
        import random
        import threading
        import time

        import httpx
        from dbos import DBOS, SQLAlchemyDatasource

        ds = SQLAlchemyDatasource.create(os.environ["APP_DATABASE_URL"])

        @ds.transaction()
        def insert_order(order: dict) -> int:
            return int(time.time())

        @DBOS.step()
        async def fetch(url: str) -> str:
            return (await httpx.AsyncClient().get(url)).text

        def roll() -> float:
            return random.random()

        @DBOS.workflow()
        async def fan_out(urls: list) -> list:
            pages = await asyncio.gather(*(fetch(u) for u in urls))
            await asyncio.sleep(0)
            time.sleep(0.0)
            insert_order({"pages": len(pages)})
            DBOS.run_step(roll)
            await asyncio.sleep(5)  # expect: RT303
            threading.Thread(target=print).start()  # expect: RT302
            return pages
    """})
    diagnostics = assert_marks(tmp_path)
    thread = next(d for d in diagnostics if d.rule == "RT302")
    assert "workflow.wait" not in thread.message and "@DBOS.step()" in thread.message


def test_temporal_thread_finding_suggests_an_activity_not_workflow_wait(tmp_path: Path) -> None:
    write(tmp_path, {"wf.py": """
        import subprocess
        from temporalio import workflow

        @workflow.defn
        class Build:
            @workflow.run
            async def run(self) -> str:
                return subprocess.check_output(["git", "rev-parse", "HEAD"]).decode()  # expect: RT302
    """})
    (finding,) = assert_marks(tmp_path)
    assert "workflow.wait" not in finding.message and "activity" in finding.message


def test_read_only_global_is_not_a_write_and_writes_say_what_they_write(tmp_path: Path) -> None:
    write(tmp_path, {"wf.py": """
        import stripe
        from dbos import DBOS

        LIMIT = 3
        COUNT = 0
        REGISTRY = {}

        @DBOS.workflow()
        def run_job(payload: str, signature: str) -> int:
            global LIMIT
            global COUNT
            stripe.Webhook.construct_event(payload, signature, "whsec")
            run_id = DBOS.workflow_id
            REGISTRY[run_id] = payload  # expect: RT304
            try:
                COUNT += 1  # expect: RT304
                return LIMIT
            finally:
                del REGISTRY[run_id]  # expect: RT304
    """})
    messages = sorted(d.message for d in assert_marks(tmp_path))
    assert messages[0].startswith("COUNT += ... writes module-level state")
    assert messages[1].startswith("REGISTRY[run_id] = ... writes module-level state")
    assert messages[2].startswith("del REGISTRY[run_id] writes module-level state")


# --- recall -------------------------------------------------------------------------------------


def test_plain_init_of_a_workflow_class_is_orchestration_code(tmp_path: Path) -> None:
    write(tmp_path, {"wf.py": """
        import time
        from temporalio import workflow

        class Helper:
            def __init__(self) -> None:
                self.started = time.time()

        @workflow.defn
        class Greeting:
            def __init__(self) -> None:
                self.started = time.time()  # expect: RT101

            @workflow.run
            async def run(self) -> float:
                return self.started
    """})
    assert_marks(tmp_path)


def test_model_calls_through_factories_embeddings_and_agents(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/models.py": """
            from langchain.chat_models import init_chat_model
            from langchain_openai import OpenAIEmbeddings

            def get_model():
                return init_chat_model("gpt-4o")

            def get_fast_model():
                return get_model()

            def embedder():
                model = OpenAIEmbeddings()
                return model
        """,
        "app/wf.py": """
            from langchain_ollama import OllamaEmbeddings
            from pydantic_ai import Agent
            from temporalio import workflow
            from app.models import embedder, get_fast_model, get_model

            agent = Agent("openai:gpt-4o")

            @workflow.defn
            class Research:
                @workflow.run
                async def run(self, question: str) -> str:
                    answer = await get_model().ainvoke(question)  # expect: RT201
                    model = get_fast_model()
                    await model.ainvoke(question)  # expect: RT201
                    embedder().embed_query(question)  # expect: RT201
                    await OllamaEmbeddings(model="m").aembed_documents([question])  # expect: RT201
                    result = await agent.run(question)  # expect: RT201
                    return str(answer) + str(result)
        """,
    })
    assert_marks(tmp_path)


def test_threading_primitives_and_thread_identity(tmp_path: Path) -> None:
    write(tmp_path, {"wf.py": """
        import threading
        from temporalio import workflow

        LOCK = threading.Lock()

        @workflow.defn
        class Waits:
            @workflow.run
            async def run(self) -> int:
                done = threading.Event()
                done.wait(5)  # expect: RT302
                LOCK.acquire()  # expect: RT302
                threading.Condition().wait()  # expect: RT302
                name = threading.current_thread().name  # expect: RT302
                return threading.get_ident()  # expect: RT302
    """})
    assert_marks(tmp_path)


def test_class_attribute_writes_are_module_state(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/stats.py": """
            class Totals:
                done = 0
        """,
        "app/wf.py": """
            from temporalio import workflow
            from app.stats import Totals

            class Stats:
                runs = 0

            def record() -> None:
                Totals.done += 1

            @workflow.defn
            class Counted:
                def __init__(self) -> None:
                    self.runs = 0

                @workflow.run
                async def run(self) -> int:
                    Stats.runs += 1  # expect: RT304
                    self.runs += 1
                    record()  # expect: RT304 via
                    Totals.done = 0  # expect: RT304
                    return Stats.runs
        """,
    })
    assert_marks(tmp_path)


# --- one finding per (helper line, rule); suppressions at the helper line and at the call site ---


_HELPER = """
    import time

    def stamp() -> float:
        return time.time(){suppress}
"""
_WORKFLOWS = """
    from temporalio import workflow
    from app.util import stamp

    @workflow.defn
    class First:
        @workflow.run
        async def run(self) -> float:
            return stamp() + stamp(){first}

    @workflow.defn
    class Second:
        @workflow.run
        async def run(self) -> float:
            a = stamp()
            return a + stamp()
"""


def _helper_project(tmp_path: Path, suppress: str = "", first: str = "") -> list:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/util.py": _HELPER.format(suppress=suppress),
        "app/wf.py": _WORKFLOWS.format(first=first),
    })
    return lint(tmp_path).diagnostics


def test_a_helper_line_reached_from_four_call_sites_is_one_finding(tmp_path: Path) -> None:
    (finding,) = _helper_project(tmp_path)
    assert (finding.path, finding.line, finding.rule) == ("app/wf.py", 8, "RT101")
    assert finding.trace == ("app.wf.First.run", "app.util.stamp", "time.time")
    assert finding.message.endswith("(also reached from 3 other call sites, in app.wf.First.run, app.wf.Second.run)")


def test_a_suppression_on_the_helper_line_silences_every_call_site(tmp_path: Path) -> None:
    assert _helper_project(tmp_path, suppress="  # replaytest: ignore[RT101]") == []


def test_a_suppression_at_a_call_site_leaves_the_others(tmp_path: Path) -> None:
    (finding,) = _helper_project(tmp_path, first="  # replaytest: ignore[RT101]")
    assert (finding.path, finding.line) == ("app/wf.py", 14)
    assert finding.message.endswith("(also reached from 1 other call site, in app.wf.Second.run)")


def test_a_set_returned_by_a_project_function_and_iterated(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/tags.py": """
            def unique_tags(items: list) -> set:
                return {item.lower() for item in items}

            def ordered_tags(items: list) -> list:
                return sorted({item.lower() for item in items})
        """,
        "app/wf.py": """
            from temporalio import workflow
            from app.tags import ordered_tags, unique_tags

            def regions(items: list) -> set:
                found = set(items)
                return found

            @workflow.defn
            class Tagger:
                @workflow.run
                async def run(self, items: list) -> list:
                    out = []
                    for tag in unique_tags(items):  # expect: RT301
                        out.append(tag)
                    for region in regions(items):  # expect: RT301
                        out.append(region)
                    for tag in ordered_tags(items):
                        out.append(tag)
                    return out
        """,
    })
    diagnostics = assert_marks(tmp_path)
    assert diagnostics[0].message.startswith("unique_tags(): iterates the set it returns, whose order changes")
