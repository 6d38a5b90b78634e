"""RT202: network I/O (HTTP, sockets, databases, cloud SDKs) in orchestration code."""

from __future__ import annotations

from replaytest.lint.rule import CallFact, Invalid, Rule

# Under a network table entry (``stripe.**``) but computed locally: webhook signature verification.
_OFFLINE_PREFIXES = ("stripe.Webhook.", "stripe.WebhookSignature.", "stripe.webhook.")
_GOOGLE_SERVICE = "googleapiclient.discovery.build."
_HTTP_VERBS = ("get", "post", "put", "patch", "delete", "head", "options", "request", "stream")


def _network_calls() -> dict[str, str]:
    names = [f"requests.{verb}" for verb in _HTTP_VERBS] + [f"httpx.{verb}" for verb in _HTTP_VERBS]
    names += [
        "requests.Session.*", "requests.sessions.Session.*", "httpx.Client.*", "httpx.AsyncClient.*",
        "aiohttp.ClientSession.*", "aiohttp.request", "urllib.request.urlopen", "urllib.request.urlretrieve",
        "urllib3.request", "urllib3.PoolManager.*", "http.client.HTTPConnection.*", "http.client.HTTPSConnection.*",
        "socket.socket", "socket.create_connection", "socket.getaddrinfo", "socket.gethostbyname",
        "smtplib.SMTP", "smtplib.SMTP_SSL", "ftplib.FTP", "telnetlib.Telnet",
        "sqlite3.connect", "psycopg.connect", "psycopg.AsyncConnection.connect", "psycopg2.connect",
        "psycopg_pool.ConnectionPool", "pymysql.connect", "MySQLdb.connect", "mysql.connector.connect",
        "asyncpg.connect", "asyncpg.create_pool", "redis.Redis.*",
        # An embedded database (a file, or MotherDuck's service for an ``md:`` path), as sqlite3's is.
        "duckdb.connect", "duckdb.connect.*",
        # Connections and pools made elsewhere (at start-up, in ``__init__``) and used here: their
        # methods query the database (``self._pool.acquire()``, ``conn.fetch(...)``).
        "sqlite3.connect.*", "psycopg.connect.*", "psycopg2.connect.*", "psycopg_pool.ConnectionPool.*",
        "psycopg.AsyncConnection.connect.*", "pymysql.connect.*", "asyncpg.connect.*", "asyncpg.create_pool.*",
        "asyncpg.Pool.*", "asyncpg.pool.Pool.*", "asyncpg.Connection.*", "asyncpg.connection.Connection.*",
        "sqlalchemy.create_engine.*", "sqlalchemy.ext.asyncio.create_async_engine.*", "redis.StrictRedis.*", "redis.from_url",
        "redis.asyncio.Redis.*", "redis.asyncio.from_url", "pymongo.MongoClient", "motor.motor_asyncio.AsyncIOMotorClient",
        "sqlalchemy.create_engine", "sqlalchemy.ext.asyncio.create_async_engine", "elasticsearch.Elasticsearch.*",
        "boto3.client.*", "boto3.resource.*", "boto3.Session.client.*", "boto3.session.Session.client.*",
        "boto3.Session.resource.*", "aioboto3.Session.client", "google.cloud.storage.Client.*",
        "google.cloud.bigquery.Client.*", "google.cloud.pubsub_v1.PublisherClient.*",
        "azure.storage.blob.BlobServiceClient.*", "azure.storage.blob.BlobClient.*",
        "azure.storage.blob.ContainerClient.*", "azure.data.tables.TableClient.*",
        "azure.data.tables.TableServiceClient.*", "grpc.insecure_channel",
        "grpc.secure_channel", "websockets.connect", "paramiko.SSHClient.*", "kafka.KafkaProducer.*",
        "kafka.KafkaConsumer", "pika.BlockingConnection", "stripe.**", "slack_sdk.WebClient.*",
        "twilio.rest.Client.**", "sendgrid.SendGridAPIClient.*",
        # Google's API client (Gmail, Calendar, Drive ...): ``build(...)`` makes a service whose request
        # objects send their request on ``.execute()`` (``service.users().messages().send(...).execute()``).
        "googleapiclient.discovery.build.**",
        # fast-flights, a Google Flights scraper: each search fetches www.google.com/travel/flights (through
        # primp's HTTP client, or a Playwright browser in its fallback modes). 2.x exports ``get_flights`` and
        # ``get_flights_from_filter`` (``fast_flights.core``); 3.x ``get_flights`` and ``fetch_flights_html``
        # (``fast_flights.fetcher``).
        *(f"fast_flights.{name}" for name in (
            "get_flights", "get_flights_from_filter", "fetch_flights_html", "core.get_flights",
            "core.get_flights_from_filter", "core.fetch", "fetcher.get_flights", "fetcher.fetch_flights_html")),
    ]
    # Database sessions (SQLAlchemy, SQLModel), usually made by a project helper (``session = get_session()``,
    # ``with get_session() as session``): the methods that talk to the database. A session made by a
    # factory (``SessionLocal = sessionmaker(...)``, ``SessionLocal()``) resolves to the factory's type.
    # ``add``/``delete`` only mark objects (``flush``/``commit`` write them): not listed.
    names += [f"{session}.{method}" for session in _SESSION_TYPES for method in _SESSION_QUERIES]
    return {name: "" for name in names}


_SESSION_TYPES = (
    "sqlalchemy.orm.Session", "sqlalchemy.orm.session.Session", "sqlalchemy.orm.sessionmaker",
    "sqlalchemy.orm.session.sessionmaker", "sqlalchemy.orm.scoped_session", "sqlalchemy.orm.scoping.scoped_session",
    "sqlalchemy.ext.asyncio.AsyncSession", "sqlalchemy.ext.asyncio.async_sessionmaker",
    "sqlalchemy.ext.asyncio.async_scoped_session", "sqlmodel.Session", "sqlmodel.orm.session.Session",
    # ``with SessionLocal.begin() as session``: a session maker's ``begin()`` yields a new session.
    "sqlalchemy.orm.sessionmaker.begin", "sqlalchemy.orm.session.sessionmaker.begin",
    "sqlalchemy.ext.asyncio.async_sessionmaker.begin",
)
_SESSION_QUERIES = (
    "execute", "exec", "scalar", "scalars", "query", "get", "get_one", "commit", "flush", "refresh", "merge",
    "rollback", "connection", "stream", "stream_scalars", "bulk_save_objects", "bulk_insert_mappings",
    "bulk_update_mappings",
)


class DoesNetworkIoOutsideStep(Rule):
    """
    ## What it does
    Finds HTTP client calls (requests, httpx, aiohttp, urllib), sockets, database drivers and cloud SDK
    clients (boto3, Google Cloud, Azure Storage, Stripe, ...) used in orchestration code.

    ## Why is this bad?
    The response is not recorded: a replay sends the request again (a second charge, a second email)
    and may receive a different answer, taking a different path than the recorded run.

    ## Example
    ```python
    orders = httpx.get(f"{API}/orders").json()
    ```

    ## Use instead
    ```python
    orders = await workflow.execute_activity(fetch_orders, start_to_close_timeout=timedelta(seconds=30))
    ```
    """

    code = "RT202"
    name = "does-network-io-outside-step"
    category = "network"
    summary = "Network, database or cloud SDK call in orchestration code"
    what = "does network I/O outside a recorded step"
    calls = _network_calls()

    def accept_call(self, call: CallFact) -> bool:
        # Parts of an SDK that compute locally (a webhook signature check hashes the payload) are not I/O.
        if call.qualname.startswith(_GOOGLE_SERVICE):
            # Building a request (``service.users().messages().send(...)``) sends nothing; ``execute()`` does.
            return call.qualname.endswith(".execute")
        return not call.qualname.startswith(_OFFLINE_PREFIXES)

    VALID = (
        """
import httpx
from dbos import DBOS

@DBOS.step()
def fetch(url: str) -> str:
    return httpx.get(url).text

@DBOS.workflow()
def pipeline(url: str) -> str:
    return fetch(url)
""",
        """
from dbos import DBOS
from sqlalchemy.orm import sessionmaker

SessionLocal = sessionmaker()

def get_db():
    db = SessionLocal()
    try:
        yield db
    finally:
        db.close()

@DBOS.step()
def count_orders() -> int:
    session = next(get_db())
    return session.execute("SELECT count(*) FROM orders").scalar()

@DBOS.workflow()
def report() -> int:
    return count_orders()
""",
    )
    INVALID = (
        Invalid(
            """
import httpx
from dbos import DBOS

@DBOS.workflow()
def pipeline(url: str) -> str:
    return httpx.get(url).text
""",
            line=6, column=12,
            message='httpx.get() does network I/O outside a recorded step in workflow code; use a @DBOS.step() function',
        ),
        Invalid(
            """
import duckdb
from dbos import DBOS

def unique_users(path: str) -> int:
    conn = duckdb.connect(path)
    return conn.execute("SELECT count(DISTINCT id) FROM users").fetchone()[0]

@DBOS.workflow()
def load(path: str) -> int:
    return unique_users(path)
""",
            line=10, column=12,
            message=('unique_users() reaches duckdb.connect(), which does network I/O outside a recorded step in '
                     'workflow code; use a @DBOS.step() function (and 1 more: conn.execute() at example.py:6)'),
        ),
        Invalid(
            """
import boto3
from temporalio import workflow

@workflow.defn
class Upload:
    @workflow.run
    async def run(self, body: bytes) -> None:
        s3 = boto3.client("s3")
        s3.put_object(Bucket="b", Key="k", Body=body)
""",
            line=9, column=9,
            message='s3.put_object() does network I/O outside a recorded step in workflow code; use an activity (workflow.execute_activity)',
        ),
        Invalid(
            """
import requests
from temporalio import workflow

@workflow.defn
class Fetch:
    def __init__(self) -> None:
        self.session = requests.Session()

    @workflow.run
    async def run(self, url: str) -> int:
        return self.session.get(url).status_code
""",
            line=11, column=16,
            message='self.session.get() does network I/O outside a recorded step in workflow code; use an activity (workflow.execute_activity)',
        ),
        Invalid(
            """
from dbos import DBOS
from sqlalchemy.orm import sessionmaker

SessionLocal = sessionmaker()

def get_db():
    db = SessionLocal()
    try:
        yield db
    finally:
        db.close()

@DBOS.workflow()
def report() -> int:
    session = next(get_db())
    return session.execute("SELECT count(*) FROM orders").scalar()
""",
            line=16, column=12,
            message='session.execute() does network I/O outside a recorded step in workflow code; use a @DBOS.step() function',
        ),
        Invalid(
            """
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import async_sessionmaker
from temporalio import workflow

AsyncSessionLocal = async_sessionmaker()

@asynccontextmanager
async def get_session():
    async with AsyncSessionLocal() as session:
        yield session

def session_factory():
    return AsyncSessionLocal

@workflow.defn
class Report:
    @workflow.run
    async def run(self) -> None:
        make = session_factory()
        async with make() as session:
            await session.commit()
        async with get_session() as session:
            await session.execute("SELECT 1")
""",
            line=22, column=19,
            message='session.commit() does network I/O outside a recorded step in workflow code; use an activity (workflow.execute_activity)',
        ),
    )
