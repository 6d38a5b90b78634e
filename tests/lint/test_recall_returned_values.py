"""Recall on values that cross a function boundary, found missing on real public code: a set an activity
or step returns and the workflow iterates, the ``done`` set of ``asyncio.wait``, a model client a method
returns (``self.make_client()``), a field default factory that is a project function, and a class
attribute written through ``type(self)`` / ``self.__class__``.

Each project is written for the test. Expected findings are marked ``# expect: RT101`` (``# expect: RT101
via`` when reached through a helper; the syntax of ``test_fixture_projects``, read strictly and compared
exactly by ``assert_marks``); every other line must stay quiet.
"""

from __future__ import annotations

from pathlib import Path

from test_engine_resolution import assert_marks, write


def test_a_set_an_activity_returns_is_iterated(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/activities.py": """
            from temporalio import activity

            @activity.defn
            async def fetch_tags(order_id: str) -> set[str]:
                return {"a", "b"}

            @activity.defn
            async def fetch_sorted(order_id: str) -> list[str]:
                return sorted({"a", "b"})

            @activity.defn
            async def fetch_regions(order_id: str):
                regions = set()
                regions.add("eu")
                return regions
        """,
        "app/wf.py": """
            from datetime import timedelta
            from temporalio import workflow
            from app.activities import fetch_regions, fetch_sorted, fetch_tags

            T = timedelta(seconds=5)

            @workflow.defn
            class Tagging:
                @workflow.run
                async def run(self, order_id: str) -> list:
                    out = []
                    for tag in await workflow.execute_activity(fetch_tags, order_id, start_to_close_timeout=T):  # expect: RT301
                        out.append(tag)
                    regions = await workflow.execute_activity(fetch_regions, order_id, start_to_close_timeout=T)
                    for region in regions:  # expect: RT301
                        out.append(region)
                    ordered = await workflow.execute_activity(fetch_sorted, order_id, start_to_close_timeout=T)
                    for tag in ordered:
                        out.append(tag)
                    for tag in sorted(await workflow.execute_activity(fetch_tags, order_id, start_to_close_timeout=T)):
                        out.append(tag)
                    return out
        """,
    })
    diagnostics = assert_marks(tmp_path)
    by_line = {d.line: d.message for d in diagnostics}
    assert by_line[12].startswith(
        "workflow.execute_activity(fetch_tags, ...): iterates the set fetch_tags() returns, whose order changes between runs"
    ), by_line[12]
    assert by_line[15].startswith("regions: iterates the set fetch_regions() returns"), by_line[15]


def test_a_set_a_dbos_step_returns_is_iterated(tmp_path: Path) -> None:
    write(tmp_path, {
        "flows.py": """
            from dbos import DBOS

            @DBOS.step()
            def customers() -> frozenset:
                return frozenset(["a", "b"])

            @DBOS.step()
            def notify(customer: str) -> None:
                pass

            @DBOS.workflow()
            def notify_all() -> None:
                for customer in customers():  # expect: RT301
                    notify(customer)
                found = customers()
                for customer in found:  # expect: RT301
                    notify(customer)
                for customer in DBOS.run_step(None, customers):  # expect: RT301
                    notify(customer)
        """,
    })
    assert_marks(tmp_path)


def test_model_clients_returned_by_methods(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/llm.py": """
            from openai import AsyncOpenAI

            class Models:
                def __init__(self) -> None:
                    self._client = AsyncOpenAI()

                def client(self):
                    return self._client

                def fresh(self):
                    return AsyncOpenAI()

                def name(self) -> str:
                    return "gpt"
        """,
        "app/wf.py": """
            from temporalio import workflow
            from app.llm import Models

            @workflow.defn
            class Drafting:
                def make_client(self):
                    return Models().fresh()

                @workflow.run
                async def run(self, text: str) -> str:
                    models = Models()
                    a = await models.client().chat.completions.create(model="m", messages=[])  # expect: RT201
                    b = await models.fresh().chat.completions.create(model="m", messages=[])  # expect: RT201
                    c = await self.make_client().chat.completions.create(model="m", messages=[])  # expect: RT201
                    return models.name().upper() + str(a) + str(b) + str(c)
        """,
    })
    assert_marks(tmp_path)


def test_class_attributes_written_through_the_instance_type(tmp_path: Path) -> None:
    write(tmp_path, {
        "wf.py": """
            from temporalio import workflow

            @workflow.defn
            class Counting:
                runs = 0
                names: list = []

                def __init__(self) -> None:
                    self.local = 0

                @workflow.run
                async def run(self, name: str) -> int:
                    type(self).runs += 1  # expect: RT304
                    self.__class__.names = [name]  # expect: RT304
                    self.local += 1
                    self.runs_seen = type(self).runs
                    return self.local
        """,
    })
    diagnostics = assert_marks(tmp_path)
    assert diagnostics[0].message.startswith("type(self).runs += ... writes module-level state"), diagnostics[0].message


def test_the_sets_asyncio_wait_returns_are_iterated(tmp_path: Path) -> None:
    write(tmp_path, {
        "flows.py": """
            import asyncio
            from dbos import DBOS

            @DBOS.step()
            async def fetch(n: int) -> int:
                return n

            @DBOS.workflow()
            async def first_results() -> list:
                tasks = [asyncio.create_task(fetch(n)) for n in range(3)]
                done, pending = await asyncio.wait(tasks)
                out = [t.result() for t in done]  # expect: RT301
                for t in pending:  # expect: RT301
                    t.cancel()
                return out + [len(done)]
        """,
    })
    assert_marks(tmp_path)


def test_a_project_function_as_a_field_default_factory(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/ids.py": """
            import uuid

            def new_id() -> str:
                return str(uuid.uuid4())
        """,
        "app/models.py": """
            from pydantic import BaseModel, Field
            from app.ids import new_id

            def constant() -> str:
                return "fixed"

            class Task(BaseModel):
                title: str
                id: str = Field(default_factory=new_id)
                tag: str = Field(default_factory=constant)
        """,
        "app/wf.py": """
            from temporalio import workflow
            from app.models import Task

            @workflow.defn
            class Planner:
                @workflow.run
                async def run(self, title: str) -> list:
                    fresh = Task(title=title)  # expect: RT103 via
                    given = Task(title=title, id=workflow.info().workflow_id)
                    return [fresh, given]
        """,
    })
    diagnostics = assert_marks(tmp_path)
    assert diagnostics[0].trace == ("app.wf.Planner.run", "app.models.Task.__init__", "app.ids.new_id", "uuid.uuid4"), (
        diagnostics[0].trace
    )


def test_a_database_pool_made_at_start_up_and_used_through_a_helper(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/db.py": """
            from contextlib import asynccontextmanager
            import asyncpg

            class Database:
                def __init__(self) -> None:
                    self._pool = None

                async def connect(self) -> None:
                    self._pool = await asyncpg.create_pool("postgresql://db")

                @asynccontextmanager
                async def connection(self):
                    async with self._pool.acquire() as conn:
                        yield conn

                async def open_tasks(self) -> list:
                    async with self.connection() as conn:
                        return await conn.fetch("SELECT id FROM tasks")

            db = Database()
        """,
        "app/flows.py": """
            from dbos import DBOS
            from app.db import db

            @DBOS.step()
            async def load_tasks() -> list:
                return await db.open_tasks()

            @DBOS.workflow()
            async def route() -> int:
                recorded = await load_tasks()
                live = await db.open_tasks()  # expect: RT202 via
                return len(recorded) + len(live)
        """,
    })
    assert_marks(tmp_path)


def test_attributes_of_an_instance_dbos_shares_between_runs(tmp_path: Path) -> None:
    write(tmp_path, {
        "flows.py": """
            from dbos import DBOS, DBOSConfiguredInstance

            @DBOS.dbos_class()
            class Counter(DBOSConfiguredInstance):
                def __init__(self, name: str) -> None:
                    self.runs = 0
                    super().__init__(name)

                @DBOS.workflow()
                def count(self, n: int) -> int:
                    self.runs += 1  # expect: RT304
                    total = n + self.runs
                    return total

            class Plain:
                def __init__(self) -> None:
                    self.seen = 0

                def bump(self) -> None:
                    self.seen += 1

            @DBOS.workflow()
            def uses_a_local_object() -> int:
                plain = Plain()
                plain.bump()
                return plain.seen
        """,
    })
    diagnostics = assert_marks(tmp_path)
    assert diagnostics[0].message == (
        "self.runs += ... writes an attribute of a Counter instance that every run shares in workflow code; "
        "use state held in the workflow's own variables"
    ), diagnostics[0].message


def test_a_database_session_a_project_helper_returns_is_followed(tmp_path: Path) -> None:
    # The helper's file read was reported before; its session's queries were not.
    write(tmp_path, {
        "app/__init__.py": "",
        "app/db.py": """
            from contextlib import contextmanager

            from sqlalchemy import create_engine
            from sqlalchemy.orm import Session, sessionmaker

            engine = create_engine("postgresql://localhost/app")
            SessionLocal = sessionmaker(bind=engine)

            def get_session():
                return SessionLocal()

            def plain_session():
                return Session(engine)

            @contextmanager
            def session_scope():
                with Session(engine) as session:
                    yield session
        """,
        "app/flows.py": """
            from dbos import DBOS

            from app.db import get_session

            @DBOS.workflow()
            def sync_orders() -> int:
                session = get_session()
                rows = session.query("Order").all()  # expect: RT202
                session.execute("UPDATE orders SET seen = true")  # expect: RT202
                session.add(rows[0])
                return len(rows)

            @DBOS.step()
            def count_in_a_step() -> int:
                session = get_session()
                return session.query("Order").count()
        """,
        "app/wf.py": """
            from temporalio import activity, workflow

            from app.db import plain_session, session_scope

            @activity.defn
            async def load(order_id: str) -> int:
                with session_scope() as session:
                    return session.execute("SELECT 1").scalar()

            @workflow.defn
            class Orders:
                @workflow.run
                async def run(self) -> int:
                    with session_scope() as session:
                        ids = session.scalars("SELECT id FROM orders").all()  # expect: RT202
                    return plain_session().get("Order", 1) + len(ids)  # expect: RT202
        """,
    })
    diagnostics = assert_marks(tmp_path)
    assert {d.message.split(" does ")[0] for d in diagnostics} == {
        "session.query()", "session.execute()", "session.scalars()", "plain_session().get()"}


def test_database_sessions_from_generator_dependencies_and_factories_are_followed(tmp_path: Path) -> None:
    # ``next(get_db())`` (a FastAPI-style generator dependency), ``await anext(...)``, ``async with`` a helper,
    # a helper returning a session factory called later, and a maker's ``begin()``: the session's queries are
    # RT202 in workflow code, as a client a helper returns is; in a step they are fine.
    write(tmp_path, {
        "app/__init__.py": "",
        "app/db.py": """
            from contextlib import asynccontextmanager, contextmanager

            from sqlalchemy import create_engine
            from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine
            from sqlalchemy.orm import Session, sessionmaker

            engine = create_engine("postgresql://localhost/app")
            SessionLocal = sessionmaker(bind=engine)
            AsyncSessionLocal = async_sessionmaker(create_async_engine("postgresql+asyncpg://localhost/app"))

            def get_db():
                db = SessionLocal()
                try:
                    yield db
                finally:
                    db.close()

            async def get_async_db():
                async with AsyncSessionLocal() as session:
                    yield session

            @contextmanager
            def get_session():
                with Session(engine) as session:
                    yield session

            @asynccontextmanager
            async def get_async_session():
                async with AsyncSessionLocal() as session:
                    yield session

            def session_factory():
                return sessionmaker(bind=engine)

            def async_session_factory():
                return AsyncSessionLocal
        """,
        "app/flows.py": """
            from dbos import DBOS

            from app.db import (async_session_factory, get_async_db, get_async_session, get_db, get_session,
                                session_factory)

            @DBOS.workflow()
            def dependency() -> None:
                session = next(get_db())
                session.execute("SELECT 1")  # expect: RT202
                dependencies = get_db()
                again = next(dependencies)
                again.commit()  # expect: RT202

            @DBOS.workflow()
            async def async_dependency() -> None:
                session = await anext(get_async_db())
                await session.scalar("SELECT 1")  # expect: RT202

            @DBOS.workflow()
            async def managers() -> None:
                with get_session() as session:
                    session.flush()  # expect: RT202
                async with get_async_session() as session:
                    await session.execute("SELECT 1")  # expect: RT202

            @DBOS.workflow()
            async def factories() -> None:
                make = session_factory()
                session = make()
                session.query("Order")  # expect: RT202
                with session_factory().begin() as started:
                    started.get("Order", 1)  # expect: RT202
                async with async_session_factory()() as session:
                    await session.refresh("order")  # expect: RT202
                session.add("order")

            @DBOS.step()
            def in_a_step() -> None:
                session = next(get_db())
                session.execute("SELECT 1")
                with get_session() as session:
                    session.commit()
        """,
    })
    diagnostics = assert_marks(tmp_path)
    assert all(d.rule == "RT202" and d.message.startswith("session.") or d.message.startswith(("again.", "started."))
               for d in diagnostics), [d.message for d in diagnostics]
