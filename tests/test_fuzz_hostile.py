"""Fuzzing the faces that read histories: mutated bytes of real history files go through the loader,
``replay``, ``diff`` and ``redact``. Every outcome is a result or a ``HistoryError``/``DiffError`` that
names the file - never another exception, never a hang (Hypothesis deadline). Mutated msgpack bytes of
real LangGraph checkpoints (a SqliteSaver database recorded here) go through ``import langgraph``: the
mutated thread is imported or refused in one line, the others are imported. Mutated DBOS pickles go
through the restricted decoder and ``import dbos``. Bounded to a few seconds each;
``benchmarks/fuzz_histories.py`` runs the long version."""

from __future__ import annotations

import importlib.util
import random
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replaytest.history import HistoryError, Redactor, load_history, redact_history
from replaytest.plugins.journal import PLUGIN
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.diff import DiffError, diff_files
from replaytest.replay.runner import load_workflows, replay_file

REPO = Path(__file__).resolve().parents[1]
SEEDS = sorted((REPO / "fixtures/histories").glob("*.json"))
sys.path.insert(0, str(REPO))
WORKFLOWS = load_workflows(["fixtures.journal_app.agent:support_agent"], REPO)

_INSERTS = [b"1e999", b"NaN", b'"\\ud800"', b"9" * 5000, b"[" * 600, b"{", b'"status": "x", "status"', b"\x00",
            b"\xff\xfe", b'"redacted": 3', b"-1", b"null", b'"\x1b[31m\r\n"', b"}"]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(SEEDS[draw(st.integers(0, len(SEEDS) - 1))].read_bytes())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["insert", "delete", "flip", "truncate"]))
        if action == "insert":
            data[at:at] = draw(st.sampled_from(_INSERTS))
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 40))]
        elif action == "flip" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        else:
            del data[at:]
    return bytes(data)


@settings(max_examples=60, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(mutated())
def test_mutated_histories_never_crash_loader_replay_diff_or_redact(tmp_path_factory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "h.json"
    path.write_bytes(data)
    try:
        history = load_history(path)
    except HistoryError as error:
        assert error.path == path
        history = None
    assert PLUGIN.replayer is not None
    result = replay_file(path, [PLUGIN.replayer], WORKFLOWS, ReplayOptions())
    assert result.status in ("passed", "diverged", "stale", "error")
    if history is None:
        assert result.status == "error"
    try:
        diff_files(path, SEEDS[0], compare_args=True)
    except (HistoryError, DiffError):
        pass
    if history is not None:
        redacted, _ = redact_history(history, Redactor.build())
        assert len(redacted.events) == len(history.events)


def _fuzz_benchmark() -> ModuleType:
    """``benchmarks/fuzz_histories.py``, whose mutators the long run uses, loaded as a module."""
    sys.path.append(str(REPO / "benchmarks"))  # its refund agent, which LangGraph revives by module name
    spec = importlib.util.spec_from_file_location("fuzz_histories", REPO / "benchmarks/fuzz_histories.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_histories"] = module
    spec.loader.exec_module(module)
    return module


def test_mutated_langgraph_checkpoints_are_imported_or_refused_and_never_lose_another_thread(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.checkpoint.sqlite")
    from replaytest.plugins.langgraph.importer import current_code

    fuzz = _fuzz_benchmark()
    seed_db = tmp_path / "seed.sqlite"
    code = current_code([fuzz.record_langgraph_seed(seed_db)])
    assert code.tasks == {"look_up_order", "check_policy", "issue_refund"}
    thread_ids = ["completed", "parked", "failed"]
    rng = random.Random(18)
    outcomes: Counter[str] = Counter()
    for run in range(250):
        db = tmp_path / f"run-{run}.sqlite"
        target = fuzz.mutate_langgraph_thread(rng, seed_db, db, thread_ids)
        # Any exception fails the test, LostThread included: an untouched thread not imported, or a
        # refusal that is not one line naming the mutated thread.
        outcomes[fuzz.import_langgraph(db, tmp_path / "out", code, thread_ids, target)] += 1
        for leftover in tmp_path.glob(f"run-{run}.sqlite*"):
            leftover.unlink()
    assert sum(outcomes.values()) == 250
    assert set(outcomes) <= {"langgraph-imported", "langgraph-refused"}
    assert outcomes["langgraph-refused"] > 100, outcomes  # the mutations do reach the decoder's refusals


# --- DBOS pickles ---------------------------------------------------------------------------------


def test_mutated_dbos_pickles_are_decoded_or_refused_and_each_imports_or_refuses_its_run(tmp_path: Path) -> None:
    """300 seeded mutations of the pickles the DBOS shop wrote when recorded for real: the decoder returns
    JSON or ``PickleRefused``, ``import dbos`` writes the run or refuses it; nothing else escapes."""
    import random

    pytest.importorskip("dbos")
    fuzz = _fuzz_benchmark()
    system_db = fuzz.record_dbos_shop(tmp_path / "shop")
    seeds = fuzz.recorded_dbos_pickles(system_db)
    assert len(seeds) > 20
    target = fuzz.DBOSFuzzTarget(system_db, tmp_path)
    rng = random.Random(18)
    outcomes: dict[str, int] = {}
    for _ in range(300):
        workflow_id, function_id, seed = rng.choice(seeds)
        raw = fuzz.mutate_dbos_pickle(rng, seed)
        decoded = target.decode(raw)
        imported = target.import_run(workflow_id, function_id, raw)
        assert (decoded, imported) in {("dbos-decoded", "dbos-import-written"), ("dbos-decode-refused", "dbos-import-refused")}, raw
        outcomes[decoded] = outcomes.get(decoded, 0) + 1
    assert outcomes["dbos-decoded"] > 10 and outcomes["dbos-decode-refused"] > 10  # both paths were exercised


# --- importers: Restate admin API answers, Azure --http-json files ----------------------------------------


def test_hostile_restate_answers_are_imported_or_one_line_errors_and_never_write_half(tmp_path: Path) -> None:
    """200 seeded hostile answers of a stand-in admin API (truncations, deep nesting, lying Content-Lengths,
    trickles, never-ending bodies, redirects, random bytes, rows of the wrong types) through ``import restate``
    with a 1 MiB limit and a 0.5 s deadline: each is imported (invocations refused one by one, if so) or a
    one-line error naming the URL with nothing written; no other exception, no redirect to another server."""
    fuzz = _fuzz_benchmark()
    target = fuzz.RestateFuzzTarget()
    outcomes: Counter[str] = Counter()
    try:
        for run in range(200):
            outcomes[target.import_once(random.Random(f"18-restate-{run}"), tmp_path / "out")] += 1
    finally:
        target.close()
    assert outcomes["restate-error"] > 50 and outcomes["restate-imported"] > 10, outcomes
    assert {"trickle", "never-ending", "deep", "content-length-huge", "rows-sys_journal"} <= set(target.kinds), target.kinds


def test_hostile_azure_status_files_are_imported_or_one_line_errors_and_never_write_half(tmp_path: Path) -> None:
    """500 seeded hostile ``--http-json`` files (mutated statuses, wrong types, deep nesting, sparse giants,
    bad UTF-8, random bytes) through ``import azure-durable`` with a 1 MiB limit: each is imported (instances
    refused one by one, if so) or a one-line error naming the file with nothing written."""
    fuzz = _fuzz_benchmark()
    outcomes: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for run in range(500):
        path = tmp_path / "status.json"
        kind = fuzz.hostile_status_file(random.Random(f"18-azure-{run}"), path)
        kinds[kind] += 1
        outcomes[fuzz.import_status_file(path, tmp_path / "out", kind)] += 1
    assert outcomes["azure-error"] > 100 and outcomes["azure-imported-some-refused"] > 50, outcomes
    assert {"huge", "deep", "utf8", "json", "valid"} <= set(kinds), kinds
