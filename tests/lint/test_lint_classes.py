"""Precision and recall classes of ``replaytest lint`` found open on real code, each in a project written
for it: a DBOS patch check in coroutines ``asyncio.gather`` runs, ``with lock:`` on a thread lock (also
one another module exports, and one a workflow keeps on ``self``), a ``nonlocal`` write in orchestration
code, an Azure client getter named as the network call, a project folder named like a framework, a callback
handed to project code.

Expected findings are marked ``# expect: RT302`` (``via`` when reached through a helper), the syntax of
``test_fixture_projects``, compared exactly by ``assert_marks``; every other line must stay quiet.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lintkit import run_replaytest
from test_engine_resolution import assert_marks, write


def test_a_patch_check_in_gathered_coroutines_of_another_module(tmp_path: Path) -> None:
    write(tmp_path, {
        "shop/__init__.py": "",
        "shop/handlers.py": """
            from dbos import DBOS

            @DBOS.step()
            async def charge(item: str) -> str:
                return item

            async def handle(item: str) -> str:
                if await DBOS.patch_async("use-v2"):
                    return await charge(item + "-v2")
                return await charge(item)

            async def refund(item: str) -> str:
                if await DBOS.patch_async("refund-v2"):
                    return await charge(item + "-r2")
                return await charge(item)

            async def refund_via(item: str) -> str:
                return await refund(item)

            def legacy(item: str) -> bool:
                return DBOS.deprecate_patch("old")
        """,
        "shop/flows.py": """
            import asyncio
            from dbos import DBOS
            from shop.handlers import charge, handle, refund_via, legacy

            @DBOS.workflow()
            async def fan_out(items: list) -> list:
                return await asyncio.gather(*(handle(i) for i in items))  # expect: RT302 via

            @DBOS.workflow()
            async def nested(items: list) -> list:
                return await asyncio.gather(refund_via(items[0]), charge(items[1]))  # expect: RT302 via

            @DBOS.workflow()
            async def one_at_a_time(items: list) -> list:
                legacy(items[0])
                return [await handle(i) for i in items]

            @DBOS.workflow()
            async def steps_only(items: list) -> list:
                return await asyncio.gather(*(charge(i) for i in items))
        """,
    })
    diagnostics = assert_marks(tmp_path)
    nested = next(d for d in diagnostics if d.line == 11)
    assert nested.trace == ("shop.flows.nested", "shop.handlers.refund_via", "shop.handlers.refund",
                            "dbos.DBOS.patch_async")
    assert "DBOSPatchNondeterminismError" in nested.message


def test_with_a_thread_lock_blocks_like_acquire(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/sync.py": """
            import threading

            LOCK = threading.Lock()
            GATE = threading.Semaphore(2)
        """,
        "app/wf.py": """
            import asyncio
            import threading
            from temporalio import workflow
            from app import sync
            from app.sync import LOCK

            @workflow.defn
            class Guarded:
                def __init__(self) -> None:
                    self.cond = threading.Condition()
                    self.alock = asyncio.Lock()

                @workflow.run
                async def run(self) -> int:
                    with LOCK:  # expect: RT302
                        pass
                    with sync.GATE:  # expect: RT302
                        pass
                    with self.cond:  # expect: RT302
                        pass
                    async with self.alock:
                        pass
                    LOCK.acquire()  # expect: RT302
                    return 1
        """,
    })
    diagnostics = assert_marks(tmp_path)
    messages = {d.line: d.message for d in diagnostics}
    assert messages[15].startswith("with LOCK blocks on a thread primitive the engine does not record")
    assert messages[19].startswith("with self.cond blocks on a thread primitive")


def test_a_nonlocal_counter_written_by_a_workflow(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/flows.py": """
            from dbos import DBOS

            def make(name: str):
                runs = 0
                seen = 0

                @DBOS.workflow(name=name)
                def counted(items: list) -> int:
                    nonlocal runs, seen
                    runs += 1  # expect: RT304
                    seen = len(items)  # expect: RT304
                    total = 0

                    def add(n: int) -> None:
                        nonlocal total
                        total += n

                    add(runs)
                    return total

                return counted
        """,
    })
    assert_marks(tmp_path)


def test_a_clock_read_in_a_query_handler_is_worded_as_a_sandbox_rejection(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/util.py": """
            import random
            import time

            def stamp() -> float:
                return time.monotonic()

            def elapsed() -> float:
                return time.perf_counter()

            def pick(items: list) -> str:
                return random.choice(items)
        """,
        "app/wf.py": """
            import os
            from temporalio import workflow
            from app.util import elapsed, pick, stamp

            @workflow.defn
            class Status:
                @workflow.run
                async def run(self) -> float:
                    return stamp()  # expect: RT101 via

                @workflow.query
                def age(self) -> float:
                    return elapsed()  # expect: RT101 via

                @workflow.query
                def sample(self, items: list) -> str:
                    return pick(items) + os.getenv("REGION", "")  # expect: RT102 via, RT204
        """,
    })
    by_line = {}
    for diagnostic in assert_marks(tmp_path):
        by_line.setdefault(diagnostic.line, []).append(diagnostic.message)
    sandbox = "in a query handler, where it does not break replay (queries are not recorded) but Temporal's " \
              "workflow sandbox rejects it at run time"
    assert len(by_line[9]) == 1 and "in workflow code" in by_line[9][0] and sandbox not in by_line[9][0]
    assert len(by_line[13]) == 1 and sandbox in by_line[13][0] and "in workflow code" not in by_line[13][0]
    environment_message, random_message = sorted(by_line[17])
    assert environment_message.startswith("os.getenv()") and random_message.startswith("pick() reaches")
    assert sandbox in random_message
    # Reading the environment is not one of the categories worded for queries: it stays a workflow-code finding.
    assert "in workflow code" in environment_message and sandbox not in environment_message


def test_an_azure_client_getter_is_not_the_network_call(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/storage.py": """
            from azure.storage.blob import BlobServiceClient

            def service() -> BlobServiceClient:
                return BlobServiceClient.from_connection_string("UseDevelopmentStorage=true")

            def save(name: str, data: bytes) -> None:
                container = service().get_container_client("reports")
                container.upload_blob(name, data)

            SERVICE = BlobServiceClient.from_connection_string("UseDevelopmentStorage=true")

            def blob_of(name: str):
                return SERVICE.get_container_client("reports").get_blob_client(name)
        """,
        "app/wf.py": """
            from temporalio import workflow
            from app.storage import blob_of, save

            @workflow.defn
            class Report:
                @workflow.run
                async def run(self, name: str) -> bytes:
                    save(name, b"x")  # expect: RT202 via
                    blob = blob_of(name)
                    return blob.download_blob().readall()  # expect: RT202
        """,
    })
    messages = {d.line: d.message for d in assert_marks(tmp_path)}
    assert messages[8].startswith("save() reaches container.upload_blob(), which does network I/O")
    assert messages[10].startswith("blob.download_blob() does network I/O")


# ``replaytest lint`` in an interpreter where ``dbos`` is not importable (lint jobs often install only the
# linter): ``sys.modules["dbos"] = None`` makes ``importlib.util.find_spec("dbos")`` answer None.
_WITHOUT_DBOS = (
    "import runpy, sys; sys.modules['dbos'] = None; sys.argv = ['replaytest', *sys.argv[1:]]; "
    "runpy.run_module('replaytest', run_name='__main__', alter_sys=True)"
)

_FOLDER_NAMED_DBOS = {
    # No __init__.py anywhere: linted from llama_agents/, the folder's modules are named dbos.runtime, dbos.region.
    "llama_agents/dbos/region.py": """
        import os

        def region() -> str:
            return os.getenv("REGION", "")
    """,
    "llama_agents/dbos/runtime.py": """
        import time
        from dbos import DBOS
        from dbos.region import region

        @DBOS.step()
        def fetch() -> float:
            return time.time()

        @DBOS.workflow()
        def run() -> float:
            DBOS.sleep(1)
            DBOS.logger.info(region())
            return fetch() + time.time()
    """,
}


def _folder_named_dbos_findings(report: dict) -> list[tuple[str, int, str, list[str]]]:
    return sorted((d["path"], d["line"], d["rule"], d["trace"]) for d in report["diagnostics"])


_EXPECTED_FOLDER_NAMED_DBOS = [
    ("dbos/runtime.py", 12, "RT204", ["dbos.runtime.run", "dbos.region.region", "os.getenv"]),
    ("dbos/runtime.py", 13, "RT101", []),
]


def test_a_project_folder_named_like_a_framework_keeps_the_framework(tmp_path: Path) -> None:
    import subprocess
    import sys

    write(tmp_path, _FOLDER_NAMED_DBOS)
    project = tmp_path / "llama_agents"
    completed = subprocess.run(
        [sys.executable, "-c", _WITHOUT_DBOS, "lint", ".", "--format", "json", "--no-cache", "--jobs", "1"],
        cwd=project, capture_output=True, timeout=120, text=True, env={**os.environ, "NO_COLOR": "1"},
    )
    assert completed.returncode == 1, completed.stderr
    assert _folder_named_dbos_findings(json.loads(completed.stdout)) == _EXPECTED_FOLDER_NAMED_DBOS
    # ``dbos.DBOS`` is the framework's, not a module of the folder: no "cannot resolve" note.
    assert "cannot resolve" not in completed.stderr, completed.stderr
    installed = run_replaytest("lint", ".", "--format", "json", "--no-cache", "--jobs", "1", cwd=project)
    assert _folder_named_dbos_findings(installed.json()) == _EXPECTED_FOLDER_NAMED_DBOS
    assert "cannot resolve" not in installed.stderr, installed.stderr


_SETTINGS_HELPERS = """
    import os
    {padding}
    def region() -> str:
        return os.getenv("REGION", "eu")

    def settings() -> dict:
        return {{"region": region(), "home": os.environ["HOME"], "pid": os.getpid()}}
"""


def test_two_hazards_of_one_rule_behind_one_call_are_both_named(tmp_path: Path) -> None:
    files = {
        "app/__init__.py": "",
        "app/config.py": _SETTINGS_HELPERS.format(padding=""),
        "app/wf.py": """
            from temporalio import workflow
            from app.config import settings

            @workflow.defn
            class Configured:
                @workflow.run
                async def run(self) -> dict:
                    return settings()  # expect: RT204 via
        """,
    }
    write(tmp_path, files)
    (finding,) = assert_marks(tmp_path)
    assert finding.message == (
        "settings() reaches os.environ, which reads the process environment in workflow code; use workflow input "
        "or an activity (and 2 more: os.getpid() at app/config.py:7, os.getenv() at app/config.py:4)"
    )
    # The tail names lines; the fingerprint does not depend on them.
    write(tmp_path, {"app/config.py": _SETTINGS_HELPERS.format(padding="\n\n")})
    (moved,) = assert_marks(tmp_path)
    assert moved.message.endswith("(and 2 more: os.getpid() at app/config.py:9, os.getenv() at app/config.py:6)")
    assert moved.fingerprint == finding.fingerprint


def test_a_callback_handed_to_project_code_is_followed(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/sched.py": """
            class Scheduler:
                def __init__(self, executor, limit=None):
                    self.executor = executor
                    self.limit = limit

                def run(self, items):
                    return [self.executor(item) for item in items]
        """,
        "app/wf.py": """
            from datetime import datetime, timedelta
            from temporalio import workflow
            from app.sched import Scheduler

            def stamp(item: str) -> str:
                return f"{item}@{datetime.now().isoformat()}"

            def plain(item: str) -> str:
                return item.upper()

            LIMIT = len("abc")

            @workflow.defn
            class Batch:
                def __init__(self) -> None:
                    self.limit = 3

                @workflow.run
                async def run(self, items: list[str]) -> list[str]:
                    first = Scheduler(executor=self.execute_task)  # expect: RT101 via
                    second = Scheduler(stamp)  # expect: RT101 via
                    quiet = Scheduler(plain, limit=self.limit)
                    also_quiet = Scheduler(executor=self.quiet_task, limit=LIMIT)
                    done = await workflow.execute_activity(stamp, items[0], start_to_close_timeout=timedelta(seconds=5))
                    return first.run(items) + second.run(items) + quiet.run(items) + also_quiet.run([done])

                def execute_task(self, item: str) -> str:
                    return item + str(datetime.now())

                def quiet_task(self, item: str) -> str:
                    return item
        """,
    })
    diagnostics = assert_marks(tmp_path)
    messages = {d.line: d.message for d in diagnostics}
    assert messages[20] == ("self.execute_task (a callback passed to Scheduler()) reaches datetime.now(), which reads "
                            "the wall clock in workflow code; use workflow.now()")
    assert messages[21].startswith("stamp (a callback passed to Scheduler()) reaches datetime.now()")


def test_an_app_object_imported_from_the_package_keeps_its_decorators(tmp_path: Path) -> None:
    # The Blueprint is made once in the package's __init__ and each module registers on it (``from . import bp``):
    # its methods still mark orchestrators and activities in a module that imports the framework.
    write(tmp_path, {
        "pipeline/__init__.py": """
            import azure.durable_functions as df

            bp = df.Blueprint()
        """,
        "pipeline/orchestrator.py": """
            from datetime import datetime, timezone

            import azure.durable_functions as df

            from . import bp

            @bp.orchestration_trigger(context_name="context")
            def pipeline(context: df.DurableOrchestrationContext):
                stamp = datetime.now(timezone.utc).isoformat()  # expect: RT101
                result = yield context.call_activity("fetch", stamp)
                return result

            @bp.activity_trigger(input_name="stamp")
            def fetch(stamp: str) -> str:
                return f"{stamp} fetched at {datetime.now(timezone.utc).isoformat()}"
        """,
        "tools/__init__.py": "",
        "tools/events.py": """
            from datetime import datetime

            from . import registry

            @registry.orchestration_trigger(context_name="context")
            def not_azure(context):
                return datetime.now()
        """,
        "tools/registry.py": """
            def orchestration_trigger(**names):
                return lambda function: function
        """,
    })
    diagnostics = assert_marks(tmp_path)
    assert [d.message for d in diagnostics] == [
        "datetime.now() reads the wall clock in workflow code; use context.current_utc_datetime"]
