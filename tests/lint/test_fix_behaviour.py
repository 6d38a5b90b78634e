"""Every fix, run before and after on the same inputs: a safe fix must behave the same, an unsafe one is
shown to differ (or, where these inputs cannot show it, stays unsafe for the reason given).

Each case is a small orchestration module using one flagged call. The real linter finds it and the real
``fix`` rewrites it (``--unsafe`` included); then the original and the fixed module are executed in the
same deterministic world: one instant ``T`` for every clock, one seeded ``random.Random`` for every
random draw, and a log of sleeps. The stand-ins keep each API's documented semantics: CPython's own
``datetime.now(tz)`` is ``fromtimestamp(time.time(), tz)``, so the frozen clock calls the real
``fromtimestamp``; ``workflow.now()`` is temporalio's ``datetime.fromtimestamp(workflow.time(),
timezone.utc)``; ``workflow.uuid4()`` is temporalio's UUID from ``workflow.random().getrandbits(128)``;
``workflow.wait``/``as_completed`` are temporalio's real functions; the journal's ``ctx.now()`` is aware
UTC (``replaytest.journal.Context.now``). A framework's clock and random source cannot run outside its
worker, hence the stand-ins; what is compared is the programs' results (value, type, zone) and sleeps.

A coverage test checks that every fix template of every framework profile has a case here.
"""

from __future__ import annotations

import asyncio
import datetime as real_datetime
import importlib.util
import inspect
import os
import random as real_random
import sys
import textwrap
import time as real_time
import types
import uuid as real_uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from replaytest.config import Config
from replaytest.lint.engine import build_context, lint_paths
from replaytest.lint.fix import fix_files
from replaytest.plugins import load_plugins

PLUGINS = load_plugins()
PROFILES = [plugin.profile for plugin in PLUGINS if plugin.profile is not None]
T = 1_764_000_000.5  # the instant every clock reads (exactly representable, so floats compare exactly)
T_NS = 1_764_000_000_500_000_000
SEED = 20261130


@dataclass
class World:
    """One deterministic world per execution: the clock, the random stream, the sleeps."""

    rng: real_random.Random = field(default_factory=lambda: real_random.Random(SEED))
    sleeps: list[Any] = field(default_factory=list)


def _uuid4_from(rng: real_random.Random) -> real_uuid.UUID:
    return real_uuid.UUID(bytes=rng.getrandbits(128).to_bytes(16, "big"), version=4)


def _copy(module: types.ModuleType) -> types.ModuleType:
    clone = types.ModuleType(module.__name__)
    clone.__dict__.update({k: v for k, v in module.__dict__.items() if k not in ("__name__", "__spec__")})
    return clone


def _identity_decorator(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda target: target


def _standins(world: World) -> dict[str, types.ModuleType]:
    from temporalio import workflow as real_workflow

    class FrozenDatetime(real_datetime.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> real_datetime.datetime:  # type: ignore[override]
            return real_datetime.datetime.fromtimestamp(T, tz)

        @classmethod
        def utcnow(cls) -> real_datetime.datetime:  # type: ignore[override]
            return real_datetime.datetime.fromtimestamp(T, real_datetime.timezone.utc).replace(tzinfo=None)

    datetime_module = _copy(real_datetime)
    datetime_module.datetime = FrozenDatetime  # type: ignore[attr-defined]

    time_module = _copy(real_time)
    time_module.time = lambda: T  # type: ignore[attr-defined]
    time_module.time_ns = lambda: T_NS  # type: ignore[attr-defined]
    time_module.sleep = lambda seconds: world.sleeps.append(("blocking sleep", seconds))  # type: ignore[attr-defined]

    random_module = _copy(real_random)
    for name in dir(real_random.Random):
        if not name.startswith("_") and callable(getattr(world.rng, name)):
            setattr(random_module, name, getattr(world.rng, name))

    uuid_module = _copy(real_uuid)
    uuid_module.uuid4 = lambda: _uuid4_from(world.rng)  # type: ignore[attr-defined]
    uuid_module.uuid1 = lambda: real_uuid.UUID(int=world.rng.getrandbits(128), version=1)  # type: ignore[attr-defined]

    async def durable_sleep(seconds: float, result: Any = None) -> Any:
        world.sleeps.append(("sleep", seconds))
        await real_asyncio_sleep(0)
        return result

    asyncio_module = _copy(asyncio)
    asyncio_module.sleep = durable_sleep  # type: ignore[attr-defined]

    workflow_module = types.ModuleType("temporalio.workflow")
    workflow_module.defn = _identity_decorator  # type: ignore[attr-defined]
    workflow_module.run = _identity_decorator  # type: ignore[attr-defined]
    workflow_module.time = lambda: T  # type: ignore[attr-defined]
    workflow_module.time_ns = lambda: T_NS  # type: ignore[attr-defined]
    workflow_module.now = lambda: real_datetime.datetime.fromtimestamp(T, real_datetime.timezone.utc)  # type: ignore[attr-defined]
    workflow_module.random = lambda: world.rng  # type: ignore[attr-defined]
    workflow_module.uuid4 = lambda: _uuid4_from(world.rng)  # type: ignore[attr-defined]
    workflow_module.wait = real_workflow.wait  # type: ignore[attr-defined]
    workflow_module.as_completed = real_workflow.as_completed  # type: ignore[attr-defined]
    temporalio_module = types.ModuleType("temporalio")
    temporalio_module.workflow = workflow_module  # type: ignore[attr-defined]

    class DBOS:
        workflow = staticmethod(_identity_decorator)
        step = staticmethod(_identity_decorator)

        @staticmethod
        def sleep(seconds: float) -> None:
            world.sleeps.append(("blocking sleep", seconds))

        @staticmethod
        async def sleep_async(seconds: float) -> None:
            world.sleeps.append(("sleep", seconds))
            await real_asyncio_sleep(0)

    dbos_module = types.ModuleType("dbos")
    dbos_module.DBOS = DBOS  # type: ignore[attr-defined]

    journal_module = types.ModuleType("replaytest.journal")
    journal_module.workflow = _identity_decorator  # type: ignore[attr-defined]

    class Handlers:
        def __init__(self, name: str) -> None:
            self.name = name

        def main(self, *args: Any, **kwargs: Any) -> Any:
            return lambda target: target

        handler = main

    restate_module = types.ModuleType("restate")
    for kind in ("Workflow", "Service", "VirtualObject"):
        setattr(restate_module, kind, Handlers)

    class DFApp:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def orchestration_trigger(self, *args: Any, **kwargs: Any) -> Any:
            return lambda target: target

    azure_df = types.ModuleType("azure.durable_functions")
    azure_df.DFApp = DFApp  # type: ignore[attr-defined]
    azure_module = types.ModuleType("azure")
    azure_module.durable_functions = azure_df  # type: ignore[attr-defined]

    return {
        "datetime": datetime_module, "time": time_module, "random": random_module, "uuid": uuid_module,
        "asyncio": asyncio_module, "temporalio": temporalio_module, "temporalio.workflow": workflow_module,
        "dbos": dbos_module, "replaytest.journal": journal_module, "restate": restate_module,
        "azure": azure_module, "azure.durable_functions": azure_df,
    }


real_asyncio_sleep = asyncio.sleep


class JournalContext:
    """``replaytest.journal.Context``'s deterministic API: now() aware UTC, random() a float, uuid() a
    UUID4, sleep(seconds) a durable timer."""

    def __init__(self, world: World) -> None:
        self.world = world

    def now(self) -> real_datetime.datetime:
        return real_datetime.datetime.fromtimestamp(T, real_datetime.timezone.utc)

    def random(self) -> float:
        return self.world.rng.random()

    def uuid(self) -> real_uuid.UUID:
        return _uuid4_from(self.world.rng)

    def sleep(self, seconds: float) -> None:
        self.world.sleeps.append(("blocking sleep", seconds))


class RestateContext:
    """Restate's context: uuid() a UUID4 from its seeded random, random() a ``random.Random``, time() a
    durable future (to be awaited) of the time."""

    def __init__(self, world: World) -> None:
        self.world = world

    def uuid(self) -> real_uuid.UUID:
        return _uuid4_from(self.world.rng)

    def random(self) -> real_random.Random:
        return self.world.rng

    def time(self) -> Any:
        async def later() -> float:
            return T

        return asyncio.ensure_future(later())


class AzureContext:
    """Azure Durable Functions' orchestration context: ``current_utc_datetime`` (read here as aware UTC;
    whether it is naive or aware is not part of the documented contract) and ``new_uuid()`` (a str)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.current_utc_datetime = real_datetime.datetime.fromtimestamp(T, real_datetime.timezone.utc)

    def new_uuid(self) -> str:
        return str(_uuid4_from(self.world.rng))


@dataclass(frozen=True)
class Case:
    """One fix: which template (framework, flagged name, index among that name's templates), the module
    (its ``ENTRY`` is called), the inputs (built inside each world), and the verdict."""

    framework: str
    qualname: str
    template: int
    source: str
    entry: str
    inputs: tuple[Callable[[World], tuple[Any, ...]], ...]
    verdict: str  # "same": equal on every input; "differs": on at least one input
    why: str = ""


def _temporal(body: str, *, imports: str = "", signature: str = "self") -> str:
    return textwrap.dedent(f"""\
        import asyncio
        import random
        import time
        import uuid
        from datetime import datetime, timezone
        from zoneinfo import ZoneInfo
        {imports}
        from temporalio import workflow


        @workflow.defn
        class W:
            @workflow.run
            async def run({signature}):
        """) + textwrap.indent(textwrap.dedent(body), " " * 8)


def _no_args(world: World) -> tuple[Any, ...]:
    return ()


def _zone(name: str | None) -> Callable[[World], tuple[Any, ...]]:
    return lambda world: (None if name is None else ZoneInfo(name),)


def _zone_name(name: str) -> Callable[[World], tuple[Any, ...]]:
    return lambda world: (name,)


ZONES = ("Europe/Berlin", "UTC", "Asia/Kolkata", "America/St_Johns")
RANDOM_CALLS = {
    "random": "random.random()", "randint": "random.randint(1, 6)", "randrange": "random.randrange(0, 100, 7)",
    "choice": "random.choice(['a', 'b', 'c'])", "choices": "random.choices('abc', k=5)",
    "shuffle": "(lambda items: (random.shuffle(items), items)[1])([1, 2, 3, 4, 5])",
    "sample": "random.sample(range(50), 4)", "uniform": "random.uniform(2, 3)", "gauss": "random.gauss(0, 1)",
    "getrandbits": "random.getrandbits(40)", "randbytes": "random.randbytes(6)", "triangular": "random.triangular()",
}

CASES: list[Case] = [
    # --- Temporal -------------------------------------------------------------------------------
    Case("temporal", "datetime.datetime.now", 0,
         _temporal("return datetime.now(ZoneInfo(zone)), datetime.now(timezone.utc)\n", signature="self, zone"),
         "W.run", tuple(_zone_name(z) for z in ZONES), "same"),
    Case("temporal", "datetime.datetime.now", 0,
         _temporal("return datetime.now(tz)\n", signature="self, tz"),
         "W.run", (_zone("Europe/Berlin"), _zone(None)), "differs",
         "a tz that may be None: datetime.now(None) is naive local, .astimezone(None) aware local (unsafe)"),
    Case("temporal", "datetime.datetime.now", 1, _temporal("return datetime.now()\n"), "W.run", (_no_args,),
         "differs", "naive local vs naive UTC: equal only in a UTC zone (run in America/New_York)"),
    Case("temporal", "datetime.datetime.utcnow", 0, _temporal("return datetime.utcnow()\n"), "W.run", (_no_args,),
         "same"),
    Case("temporal", "time.time", 0, _temporal("return time.time()\n"), "W.run", (_no_args,), "same"),
    Case("temporal", "time.time_ns", 0, _temporal("return time.time_ns()\n"), "W.run", (_no_args,), "same"),
    Case("temporal", "uuid.uuid4", 0, _temporal("return uuid.uuid4(), uuid.uuid4()\n"), "W.run", (_no_args,),
         "same"),
    Case("temporal", "uuid.uuid1", 0, _temporal("return uuid.uuid1()\n"), "W.run", (_no_args,), "differs",
         "a version-1 UUID becomes a version-4 one"),
    *[
        Case("temporal", f"random.{name}", 0, _temporal(f"return [{call} for _ in range(3)]\n"), "W.run",
             (_no_args,), "same")
        for name, call in RANDOM_CALLS.items()
    ],
    Case("temporal", "time.sleep", 0, _temporal("""\
        order = []

        async def other():
            order.append("other task")

        task = asyncio.ensure_future(other())
        order.append("before")
        time.sleep(5)
        order.append("after")
        await task
        return order
        """), "W.run", (_no_args,), "differs",
         "a blocking sleep lets nothing else run; the durable timer lets other tasks (handlers) interleave"),
    Case("temporal", "asyncio.wait", 0, _temporal("""\
        async def square(n):
            await asyncio.sleep(0)
            return n * n

        done, pending = await asyncio.wait([asyncio.ensure_future(square(n)) for n in range(4)])
        return sorted(t.result() for t in done), len(pending)
        """), "W.run", (_no_args,), "same",
         "unsafe nonetheless: workflow.wait orders completion deterministically, asyncio.wait need not"),
    Case("temporal", "asyncio.as_completed", 0, _temporal("""\
        async def square(n):
            await asyncio.sleep(0)
            return n * n

        return sorted([await f for f in asyncio.as_completed([square(n) for n in range(4)])])
        """), "W.run", (_no_args,), "same",
         "unsafe nonetheless: the order in which results arrive may differ"),
    # --- DBOS -----------------------------------------------------------------------------------
    Case("dbos", "time.sleep", 0, textwrap.dedent("""\
        import time

        from dbos import DBOS


        @DBOS.workflow()
        def nightly(seconds):
            time.sleep(seconds)
            return "slept"
        """), "nightly", (lambda w: (3,), lambda w: (0.25,)), "same"),
    Case("dbos", "asyncio.sleep", 0, textwrap.dedent("""\
        import asyncio

        from dbos import DBOS


        @DBOS.workflow()
        async def nightly(seconds):
            await asyncio.sleep(seconds)
            return "slept"
        """), "nightly", (lambda w: (3,), lambda w: (0.25,)), "same"),
    # --- replaytest journal ---------------------------------------------------------------------
    *[
        Case("journal", qualname, index, textwrap.dedent(f"""\
            import random
            import time
            import uuid
            from datetime import datetime
            from zoneinfo import ZoneInfo

            from replaytest.journal import workflow


            @workflow(name="w", version="1")
            def flow(ctx, zone):
                return {expression}
            """), "flow", inputs, verdict, why)
        for qualname, index, expression, inputs, verdict, why in [
            ("datetime.datetime.now", 0, "datetime.now(ZoneInfo(zone))",
             tuple((lambda z: (lambda w: (JournalContext(w), z)))(z) for z in ZONES), "same", ""),
            ("datetime.datetime.now", 1, "datetime.now()", ((lambda w: (JournalContext(w), "UTC")),), "differs",
             "naive local vs naive UTC (run in America/New_York)"),
            ("datetime.datetime.utcnow", 0, "datetime.utcnow()", ((lambda w: (JournalContext(w), "UTC")),), "same",
             ""),
            ("uuid.uuid4", 0, "(uuid.uuid4(), uuid.uuid4())", ((lambda w: (JournalContext(w), "UTC")),), "same", ""),
            ("random.random", 0, "[random.random() for _ in range(3)]",
             ((lambda w: (JournalContext(w), "UTC")),), "same", ""),
            ("time.sleep", 0, "(time.sleep(30), 'woke')[1]", ((lambda w: (JournalContext(w), "UTC")),), "same", ""),
        ]
    ],
    # --- Restate --------------------------------------------------------------------------------
    *[
        Case("restate", qualname, 0, textwrap.dedent(f"""\
            import random
            import time
            import uuid

            import restate

            checkout = restate.Workflow("checkout")


            @checkout.main()
            async def run(ctx, order):
                return {expression}
            """), "run", ((lambda w: (RestateContext(w), {"id": 1})),), verdict, why)
        for qualname, expression, verdict, why in [
            ("uuid.uuid4", "(uuid.uuid4(), uuid.uuid4())", "same", ""),
            ("random.random", "[random.random() for _ in range(3)]", "same", ""),
            ("time.time", "time.time()", "differs", "ctx.time() is a durable future to await, not a float"),
        ]
    ],
    # --- Azure Durable Functions ----------------------------------------------------------------
    *[
        Case("azure_durable", qualname, 0, textwrap.dedent(f"""\
            import uuid
            from datetime import datetime

            import azure.durable_functions as df

            app = df.DFApp()


            @app.orchestration_trigger(context_name="context")
            def process(context):
                return {expression}
            """), "process", ((lambda w: (AzureContext(w),)),), "differs", why)
        for qualname, expression, why in [
            ("datetime.datetime.utcnow", "datetime.utcnow()", "naive UTC vs the context's time (aware here)"),
            ("datetime.datetime.now", "datetime.now()", "naive local time vs the context's UTC time"),
            ("uuid.uuid4", "uuid.uuid4()", "new_uuid() returns a str, not a UUID"),
        ]
    ],
]


@contextmanager
def _installed(modules: dict[str, types.ModuleType]) -> Iterator[None]:
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


@contextmanager
def _local_zone(name: str) -> Iterator[None]:
    previous = os.environ.get("TZ")
    os.environ["TZ"] = name
    real_time.tzset()
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = previous
        real_time.tzset()


def _execute(path: Path, entry: str, make_inputs: Callable[[World], tuple[Any, ...]]) -> tuple[Any, list[Any]]:
    """Import ``path`` in a fresh world, call ``entry`` on the inputs; (result, sleeps)."""
    world = World()
    with _installed(_standins(world)):
        spec = importlib.util.spec_from_file_location(f"fixcase_{abs(hash(path))}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if "." in entry:
            class_name, method = entry.split(".")
            target = getattr(getattr(module, class_name)(), method)
        else:
            target = getattr(module, entry)
        result = target(*make_inputs(world))
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
    return result, world.sleeps


async def _awaited(awaitable: Any) -> Any:
    value = await awaitable
    if isinstance(value, asyncio.Future):  # e.g. Restate's ctx.time(): show what the caller received
        value.cancel()
        return ("an unawaited future", type(value).__name__)
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal value and type; datetimes also the same naive/aware-ness and offset (``==`` alone would
    treat an aware time as equal to the same instant in another zone)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, real_datetime.datetime):
        return a == b and (a.tzinfo is None) == (b.tzinfo is None) and a.utcoffset() == b.utcoffset() \
            and a.tzname() == b.tzname()
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _templates(framework: str, qualname: str) -> tuple[Any, ...]:
    [profile] = [p for p in PROFILES if p.name == framework]
    templates = profile.fixes[qualname]
    return templates if isinstance(templates, tuple) else (templates,)


def _fixed(tmp_path: Path, case: Case) -> tuple[Path, Path, Any]:
    original = tmp_path / "original" / "flow.py"
    original.parent.mkdir()
    original.write_text(case.source, encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    fixed = project / "flow.py"
    fixed.write_text(case.source, encoding="utf-8")
    config = Config(root=project)
    result = lint_paths([fixed], config, PROFILES, use_cache=False, jobs=1, context=build_context(config, PROFILES),
                        cwd=project)
    outcome = fix_files(result.diagnostics, unsafe=True, cwd=project, digests=result.source_digests)
    assert not outcome.skipped, outcome.skipped
    template = _templates(case.framework, case.qualname)[case.template]
    applied = [a for a in outcome.applied if a.diagnostic.framework == case.framework]
    assert applied, f"no fix applied:\n{case.source}\n{result.diagnostics}"
    stem = template.replacement.split("{", 1)[0]
    assert any(a.replacement.startswith(stem.replace("{ctx}", "")) or stem.startswith("{") for a in applied), applied
    compile(fixed.read_text(encoding="utf-8"), str(fixed), "exec")
    return original, fixed, applied


def _case_id(case: Case) -> str:
    return f"{case.framework}-{case.qualname}-{case.template}-{case.verdict}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_fix_runs_the_same_or_is_unsafe(tmp_path: Path, case: Case) -> None:
    original, fixed, applied = _fixed(tmp_path, case)
    with _local_zone("America/New_York"):  # a local zone that is not UTC, so naive local time shows
        outcomes = [(_execute(original, case.entry, inputs), _execute(fixed, case.entry, inputs))
                    for inputs in case.inputs]
    sames = [_same(before, after) for before, after in outcomes]
    fixed_text = fixed.read_text(encoding="utf-8")
    if case.verdict == "same":
        assert all(sames), f"{case.qualname}: fixed code behaves differently\n{outcomes}\n{fixed_text}"
    else:
        assert not all(sames), f"{case.qualname}: expected a difference ({case.why})\n{outcomes}\n{fixed_text}"
        assert not any(a.diagnostic.fix.safe for a in applied), f"a fix that changes behaviour is marked safe: {applied}"
    if case.verdict == "same" and not case.why:
        # Safe where it is shown to behave the same (a "same" case with a reason is unsafe by its nature).
        assert all(a.diagnostic.fix.safe for a in applied), applied


def test_naive_local_clock_fix_is_exact_only_in_a_utc_zone(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.framework == "temporal" and c.qualname == "datetime.datetime.now"
                and c.template == 1)
    original, fixed, _ = _fixed(tmp_path, case)
    with _local_zone("UTC"):
        before, after = _execute(original, case.entry, _no_args), _execute(fixed, case.entry, _no_args)
    assert _same(before, after)  # the reason it is offered at all; the zone dependence is why it is unsafe


def test_every_fix_template_has_a_before_after_case() -> None:
    templates = {
        (profile.name, qualname, index)
        for profile in PROFILES for qualname, value in profile.fixes.items()
        for index in range(len(value) if isinstance(value, tuple) else 1)
    }
    covered = {(case.framework, case.qualname, case.template) for case in CASES}
    assert templates - covered == set(), "fix templates without a before/after test"


def test_safe_clock_fixes_keep_zone_and_awareness() -> None:
    # The two clock cases in their exact shapes: naive local -> never a safe aware fix;
    # datetime.now(ZoneInfo("Europe/Berlin")) -> same zone, safe.
    [now_tz, now_local] = _templates("temporal", "datetime.datetime.now")
    assert now_tz.safe_for('ZoneInfo("Europe/Berlin")') and not now_tz.safe_for("tz")
    assert not now_local.safe
