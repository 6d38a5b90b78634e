"""Every call name a rule lists is exercised by a test input.

Two independent checks per name:

* ``test_every_listed_name_is_detected`` generates one orchestration function per rule from the rule's
  own tables (``calls``, ``reads``), one call per line, and expects a finding of that rule on every line
  (the verdict is fixed by the test: "this rule fires here", never computed by the linter);
* ``NAMES`` below is written out by hand: ``test_hand_written_names_are_still_listed`` fails when a name
  is dropped from a table, and ``test_hand_written_realistic_inputs`` lints hand-written code in the
  import styles real code uses (``from time import process_time``, ``import pendulum``, ...), with the
  expected rule marked on each line (``# expect: RT101``, the syntax of ``test_fixture_projects``, read
  strictly and compared exactly: one finding per mark, reported directly, every other line quiet).

A name added to a table needs no change here to be exercised (the generated test picks it up).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from test_fixture_projects import assert_findings_match_marks, linted_findings

from replaytest.config import Config
from replaytest.lint.engine import build_context, lint_paths
from replaytest.lint.rules import load_rules
from replaytest.plugins import load_plugins

PLUGINS = load_plugins()
RULES = {rule.code: rule for rule in load_rules()}

# The tables as documented when this test was written (hand-maintained; see the module docstring).
NAMES: dict[str, tuple[str, ...]] = {
    "RT101": (
        "arrow.now", "arrow.utcnow", "datetime.date.today", "datetime.datetime.now", "datetime.datetime.today",
        "datetime.datetime.utcnow", "pendulum.now", "pendulum.today", "time.asctime", "time.ctime", "time.gmtime",
        "time.localtime", "time.monotonic", "time.monotonic_ns", "time.perf_counter", "time.perf_counter_ns",
        "time.process_time", "time.process_time_ns", "time.thread_time", "time.thread_time_ns", "time.time",
        "time.time_ns",
    ),
    "RT102": (
        "numpy.random.*", "os.getrandom", "os.urandom", "random.Random", "random.SystemRandom",
        "random.betavariate", "random.binomialvariate", "random.choice", "random.choices", "random.expovariate",
        "random.gammavariate", "random.gauss", "random.getrandbits", "random.lognormvariate",
        "random.normalvariate", "random.paretovariate", "random.randbytes", "random.randint", "random.random",
        "random.randrange", "random.sample", "random.shuffle", "random.triangular", "random.uniform",
        "random.vonmisesvariate", "random.weibullvariate", "secrets.*",
    ),
    "RT103": (
        "bson.ObjectId", "bson.objectid.ObjectId", "nanoid.generate", "shortuuid.uuid", "ulid.ULID", "ulid.new",
        "ulid.ulid", "uuid.uuid1", "uuid.uuid4", "uuid.uuid6", "uuid.uuid7", "uuid6.uuid6", "uuid6.uuid7",
        "uuid_utils.uuid4", "uuid_utils.uuid7",
    ),
    "RT202": (
        "MySQLdb.connect", "aioboto3.Session.client", "aiohttp.ClientSession.*", "aiohttp.request",
        "asyncpg.connect", "asyncpg.create_pool", "azure.storage.blob.BlobClient.*",
        "azure.storage.blob.BlobServiceClient.*", "boto3.Session.client.*", "boto3.Session.resource.*",
        "boto3.client.*", "boto3.resource.*", "boto3.session.Session.client.*", "elasticsearch.Elasticsearch.*",
        "ftplib.FTP", "google.cloud.bigquery.Client.*", "google.cloud.pubsub_v1.PublisherClient.*",
        "google.cloud.storage.Client.*", "grpc.insecure_channel", "grpc.secure_channel",
        "http.client.HTTPConnection.*", "http.client.HTTPSConnection.*", "httpx.AsyncClient.*", "httpx.Client.*",
        "httpx.delete", "httpx.get", "httpx.head", "httpx.options", "httpx.patch", "httpx.post", "httpx.put",
        "httpx.request", "httpx.stream", "kafka.KafkaConsumer", "kafka.KafkaProducer.*",
        "motor.motor_asyncio.AsyncIOMotorClient", "mysql.connector.connect", "paramiko.SSHClient.*",
        "pika.BlockingConnection", "psycopg.AsyncConnection.connect", "psycopg.connect", "psycopg2.connect",
        "psycopg_pool.ConnectionPool", "pymongo.MongoClient", "pymysql.connect", "redis.Redis.*",
        "redis.StrictRedis.*", "redis.asyncio.Redis.*", "redis.asyncio.from_url", "redis.from_url",
        "requests.Session.*", "requests.delete", "requests.get", "requests.head", "requests.options",
        "requests.patch", "requests.post", "requests.put", "requests.request", "requests.sessions.Session.*",
        "requests.stream", "sendgrid.SendGridAPIClient.*", "slack_sdk.WebClient.*", "smtplib.SMTP",
        "smtplib.SMTP_SSL", "socket.create_connection", "socket.getaddrinfo", "socket.gethostbyname",
        "socket.socket", "sqlalchemy.create_engine", "sqlalchemy.ext.asyncio.create_async_engine",
        "sqlite3.connect", "stripe.**", "telnetlib.Telnet", "twilio.rest.Client.**", "urllib.request.urlopen",
        "urllib.request.urlretrieve", "urllib3.PoolManager.*", "urllib3.request", "websockets.connect",
    ),
    "RT203": (
        "aiofiles.open", "builtins.open", "fileinput.input", "io.open", "os.chmod", "os.lstat", "os.makedirs",
        "os.mkdir", "os.open", "os.path.exists", "os.path.getatime", "os.path.getctime", "os.path.getmtime",
        "os.path.getsize", "os.path.isdir", "os.path.isfile", "os.path.lexists", "os.remove", "os.removedirs",
        "os.rename", "os.replace", "os.rmdir", "os.stat", "os.truncate", "os.unlink", "pathlib.Path.chmod",
        "pathlib.Path.exists", "pathlib.Path.is_dir", "pathlib.Path.is_file", "pathlib.Path.lstat",
        "pathlib.Path.mkdir", "pathlib.Path.open", "pathlib.Path.read_bytes", "pathlib.Path.read_text",
        "pathlib.Path.rename", "pathlib.Path.replace", "pathlib.Path.rmdir", "pathlib.Path.stat",
        "pathlib.Path.touch", "pathlib.Path.unlink", "pathlib.Path.write_bytes", "pathlib.Path.write_text",
        "shutil.*", "tempfile.*",
    ),
    "RT204": (
        "dotenv.dotenv_values", "dotenv.load_dotenv", "getpass.getuser", "os.cpu_count", "os.getcwd", "os.getenv",
        "os.getenvb", "os.geteuid", "os.getlogin", "os.getpid", "os.getppid", "os.getuid", "os.uname", "platform.*",
        "socket.getfqdn", "socket.gethostname", "os.environ", "os.environb",
    ),
    "RT301": (
        "builtins.hash",
    ),
    "RT302": (
        "_thread.start_new_thread", "asyncio.AbstractEventLoop.run_in_executor", "asyncio.create_subprocess_exec",
        "asyncio.create_subprocess_shell", "asyncio.get_event_loop.run_in_executor",
        "asyncio.get_running_loop.run_in_executor", "asyncio.to_thread", "concurrent.futures.ProcessPoolExecutor",
        "concurrent.futures.ThreadPoolExecutor", "multiprocessing.Pool", "multiprocessing.Process",
        "multiprocessing.pool.Pool", "multiprocessing.pool.ThreadPool", "os.fork", "os.popen", "os.spawnl",
        "os.spawnv", "os.system", "subprocess.Popen", "subprocess.call", "subprocess.check_call",
        "subprocess.check_output", "subprocess.getoutput", "subprocess.getstatusoutput", "subprocess.run",
        "threading.Thread", "threading.Timer",
    ),
    "RT303": (
        "anyio.sleep", "asyncio.sleep", "gevent.sleep", "time.sleep", "trio.sleep",
    ),
    # RT201's table is generated from client classes x methods (926 names); a hand-picked sample.
    "RT201": (
        "openai.OpenAI.chat.completions.create", "openai.AsyncOpenAI.responses.create",
        "anthropic.Anthropic.messages.create", "anthropic.AsyncAnthropic.messages.stream",
        "langchain_openai.ChatOpenAI.invoke", "langchain_anthropic.ChatAnthropic.ainvoke",
        "langchain.chat_models.init_chat_model.with_structured_output.invoke", "litellm.completion",
        "litellm.acompletion", "google.genai.Client.models.generate_content", "groq.Groq.chat.completions.create",
        "cohere.ClientV2.chat", "boto3.client[bedrock-runtime].converse", "boto3.client[bedrock-runtime].invoke_model",
    ),
}
# Durable sleeps exist only where a framework has a durable timer: RT303 is generated for DBOS.
_FRAMEWORK = {"RT303": "dbos"}
_HEADERS = {
    "custom": ("import acme", "@acme.orchestration", "def flow():"),
    "dbos": ("from dbos import DBOS", "@DBOS.workflow()", "def flow():"),
}


def _expression(name: str) -> str:
    """Source that denotes ``name``: ``builtins.open`` -> ``open``, ``x.*`` -> ``x.anything``, ``x.**`` ->
    ``x.any.execute`` (a method two levels below; ``execute`` because RT202 counts only the request that
    Google's API client sends), ``boto3.client[s3].get`` -> ``boto3.client("s3").get``."""
    if name.startswith("builtins."):
        return name.split(".", 1)[1]
    name = name.replace(".**", ".any.execute").replace(".*", ".anything")
    return re.sub(r"\[([^\]]+)\]", lambda match: f'("{match.group(1)}")', name)


def _generated(names: list[str], reads: list[str], framework: str) -> tuple[str, dict[int, str]]:
    imports, decorator, signature = _HEADERS[framework]
    tops = sorted({name.split(".")[0] for name in [*names, *reads] if not name.startswith("builtins.")})
    lines = [imports, *(f"import {top}" for top in tops), "", "", decorator, signature]
    where: dict[int, str] = {}
    for name in names:
        argument = '"text"' if name == "builtins.hash" else ""
        lines.append(f"    value = {_expression(name)}({argument})")
        where[len(lines)] = name
    for name in reads:
        lines.append(f"    value = {name}")
        where[len(lines)] = name
    return "\n".join(lines) + "\n", where


def _lint(root: Path) -> list:
    config = Config(root=root, orchestration_decorators=("acme.orchestration",))
    return lint_paths([root], config, PLUGINS, use_cache=False, jobs=1, context=build_context(config, PLUGINS),
                      cwd=root).diagnostics


TABLE_RULES = sorted(code for code, rule in RULES.items() if rule.calls or getattr(rule, "reads", None))


@pytest.mark.parametrize("code", TABLE_RULES)
def test_every_listed_name_is_detected(tmp_path: Path, code: str) -> None:
    rule = RULES[code]
    source, where = _generated(sorted(rule.calls), sorted(getattr(rule, "reads", {}) or {}),
                               _FRAMEWORK.get(code, "custom"))
    (tmp_path / "wf.py").write_text(source, encoding="utf-8")
    flagged = {d.line for d in _lint(tmp_path) if d.rule == code}
    missed = sorted(name for line, name in where.items() if line not in flagged)
    assert not missed, f"{code} lists these names but flags no call of them: {missed}"
    assert len(where) == len(rule.calls) + len(getattr(rule, "reads", {}) or {})


def test_the_generated_inputs_cover_every_table_rule() -> None:
    # Guards the generator: a rule with tables must not drop out of the parametrisation.
    assert {"RT101", "RT102", "RT103", "RT201", "RT202", "RT203", "RT204", "RT301", "RT302", "RT303"} <= set(TABLE_RULES)


@pytest.mark.parametrize("code", sorted(NAMES))
def test_hand_written_names_are_still_listed(code: str) -> None:
    rule = RULES[code]
    listed = set(rule.calls) | set(getattr(rule, "reads", {}) or {})
    dropped = sorted(set(NAMES[code]) - listed)
    assert not dropped, f"{code} no longer lists {dropped}"


def test_rt101_lists_exactly_22_clock_names() -> None:
    assert len(NAMES["RT101"]) == 22
    assert set(RULES["RT101"].calls) == set(NAMES["RT101"])


# Hand-written inputs in the import styles real code uses; the expected rule is marked on its line.
REALISTIC = {
    "clock.py": """
        import time
        import time as t
        from datetime import date, datetime
        from time import asctime, ctime, gmtime, localtime, process_time, process_time_ns, thread_time, thread_time_ns

        import arrow
        import pendulum
        from temporalio import workflow


        @workflow.defn
        class Clock:
            @workflow.run
            async def run(self, seconds: float) -> list:
                return [
                    time.time(),  # expect: RT101
                    time.time_ns(),  # expect: RT101
                    t.monotonic(),  # expect: RT101
                    t.monotonic_ns(),  # expect: RT101
                    time.perf_counter(),  # expect: RT101
                    time.perf_counter_ns(),  # expect: RT101
                    process_time(),  # expect: RT101
                    process_time_ns(),  # expect: RT101
                    thread_time(),  # expect: RT101
                    thread_time_ns(),  # expect: RT101
                    localtime(),  # expect: RT101
                    gmtime(),  # expect: RT101
                    ctime(),  # expect: RT101
                    asctime(),  # expect: RT101
                    localtime(seconds),
                    ctime(seconds),
                    datetime.now(),  # expect: RT101
                    datetime.utcnow(),  # expect: RT101
                    datetime.today(),  # expect: RT101
                    date.today(),  # expect: RT101
                    pendulum.now(),  # expect: RT101
                    pendulum.today(),  # expect: RT101
                    arrow.now(),  # expect: RT101
                    arrow.utcnow(),  # expect: RT101
                    workflow.now(),
                ]
        """,
    "effects.py": """
        import os
        import random
        import secrets
        import subprocess
        import uuid
        from pathlib import Path

        import httpx
        from dbos import DBOS


        @DBOS.workflow()
        def effects(path: str) -> list:
            client = httpx.Client()
            return [
                random.triangular(),  # expect: RT102
                secrets.token_hex(8),  # expect: RT102
                os.urandom(4),  # expect: RT102
                uuid.uuid7(),  # expect: RT103
                uuid.uuid5(uuid.NAMESPACE_URL, path),
                client.get(path),  # expect: RT202
                Path(path).read_text(),  # expect: RT203
                os.path.getmtime(path),  # expect: RT203
                os.getenv("REGION"),  # expect: RT204
                os.environ["REGION"],  # expect: RT204
                hash(path),  # expect: RT301
                subprocess.check_output(["ls"]),  # expect: RT302
            ]
        """,
}


def test_hand_written_realistic_inputs(tmp_path: Path) -> None:
    for name, text in REALISTIC.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    assert_findings_match_marks(tmp_path, linted_findings(_lint(tmp_path)))


@pytest.mark.parametrize("call", ["time.localtime(0)", "time.gmtime(0)", "time.ctime(0)", "time.asctime(parts)"])
def test_conversions_with_an_argument_are_not_clock_reads(tmp_path: Path, call: str) -> None:
    # With an argument these convert a given time; without one they read the clock (written out by hand).
    (tmp_path / "wf.py").write_text(
        "import time\n\nimport acme\n\n\n@acme.orchestration\ndef flow(parts):\n"
        f"    converted = {call}\n    now = {call.split('(')[0]}()\n    return converted, now\n",
        encoding="utf-8",
    )
    assert [(d.line, d.rule) for d in _lint(tmp_path)] == [(9, "RT101")]
