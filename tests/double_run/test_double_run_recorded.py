"""``replaytest double-run`` on histories recorded on the real engines, as each engine's own tests record
them: Temporal's JSON (a dev server's), DBOS runs and LangGraph threads imported with ``replaytest import``,
AWS durable executions recorded with the testing SDK's local runner. Each case takes the recorded input,
and the recorded results answer the stubs: the runs go down the recorded path (a step's result decides a
branch or feeds the next call), and a LangGraph thread's recorded resume value carries it past its
interrupt."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
TESTS = HERE.parent


def double_run(cwd, *args, env=None):
    done = subprocess.run(
        [sys.executable, "-m", "replaytest", "double-run", "--format", "json", *args],
        cwd=cwd, env={**os.environ, "PYTHONHASHSEED": "1", **(env or {})}, capture_output=True, text=True, timeout=600,
    )
    assert done.stdout.strip(), done.stderr
    return done.returncode, {Path(r["history"]).name: r for r in json.loads(done.stdout)["results"]}


def recorded(tmp_path_factory, engine):
    folder = tmp_path_factory.mktemp(f"recorded-{engine}")
    done = subprocess.run([sys.executable, str(HERE / "record_engine_runs.py"), engine, str(folder)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "histories"


def test_temporal_history_gives_the_case_and_its_activity_results(tmp_path):
    pytest.importorskip("temporalio")
    history = TESTS / "temporal" / "histories" / "hello_timer_history.json"  # recorded on a dev server
    code, results = double_run(TESTS / "temporal", str(history), "-w", "temporal_wf_hello:Hello")
    assert code == 0, results
    result = results[history.name]
    assert (result["workflow"]["type"], result["workflow"]["id"], result["status"]) == ("Hello", "hello-1", "passed")
    assert result["events"] == 3  # say, the timer, say
    assert result["notes"] == []


def test_temporal_recorded_result_feeds_the_next_activity():
    pytest.importorskip("temporalio")
    from replaytest.history.digest import args_digest
    from replaytest.plugins.temporal.double_run import trace_temporal
    from replaytest.plugins.temporal.double_run_cases import case_from_temporal_history
    from replaytest.replay.double_run import FIRST_RUN
    from replaytest.replay.runner import load_workflows, read_head

    history = TESTS / "temporal" / "histories" / "hello_timer_history.json"
    case = case_from_temporal_history(history, read_head(history))
    assert (case.workflow, case.input, case.run_status) == ("Hello", "bob", "completed")
    trace = trace_temporal(load_workflows(["temporal_wf_hello:Hello"], TESTS / "temporal"), case, FIRST_RUN)
    assert [(c.kind, c.name) for c in trace.commands] == [("activity", "say"), ("timer", "1"), ("activity", "say")]
    # Hello passes the first activity's result to the second: the recorded "hi bob", not a null stub.
    assert trace.commands[2].args_digest == args_digest(("hi bob",), {})


def test_a_file_no_engine_reads_is_an_error_naming_it(tmp_path):
    stray = tmp_path / "notes.json"
    stray.write_text('{"hello": 1}')
    code, results = double_run(HERE, str(stray), "-w", "dr_app.workflows:control")
    assert code == 2
    assert "cannot take a case from it" in results["notes.json"]["error"]


def test_dbos_runs_give_cases_answered_by_their_recorded_results(tmp_path_factory, tmp_path):
    pytest.importorskip("dbos")
    histories = recorded(tmp_path_factory, "dbos")
    effects = tmp_path / "effects.log"
    code, results = double_run(TESTS / "dbos", str(histories / "order-ok-5.json"), str(histories / "order-ok.json"),
                               "-w", "dbos_shop.app:place_order",
                               env={"SHOP_EFFECTS": str(effects), "SHOP_APP_DB": f"sqlite:///{tmp_path / 'app.sqlite3'}"})
    assert code == 0, results
    child = results["order-ok-5.json"]  # ship: reads label["item"] of its step's result, a null stub would fail
    assert (child["workflow"]["type"], child["status"], child["events"], child["notes"]) == ("ship", "passed", 1, [])
    parent = results["order-ok.json"]
    assert (parent["workflow"]["type"], parent["status"], parent["events"]) == ("place_order", "passed", 5)
    assert any("child workflow (ship)" in note for note in parent["notes"])
    assert not effects.exists()  # no step body ran


def test_langgraph_threads_go_past_their_interrupt_with_the_recorded_resume(tmp_path_factory):
    pytest.importorskip("langgraph")
    histories = recorded(tmp_path_factory, "langgraph")
    code, results = double_run(TESTS / "langgraph", str(histories), "-w", "lg_apps.agent:order_agent")
    assert code == 0, results
    approved, waiting = results["order_agent-approved.json"], results["order_agent-waiting.json"]
    # fetch_price, two drafts, then the interrupt answered {"approved": True} as recorded, then notify.
    assert (approved["status"], approved["events"], approved["notes"]) == ("passed", 4, [])
    # The parked thread has no resume value: both runs park at the interrupt, as a new thread does.
    assert (waiting["status"], waiting["events"], waiting["notes"]) == ("passed", 3, [])


def test_aws_durable_executions_follow_their_recorded_branch(tmp_path_factory):
    if sys.version_info < (3, 11):
        pytest.skip("the AWS durable SDK needs Python 3.11")
    pytest.importorskip("aws_durable_execution_sdk_python_testing")
    histories = recorded(tmp_path_factory, "aws_durable")
    code, results = double_run(TESTS / "aws_durable", str(histories), "-w", "orders.orders_app:FUNCTIONS")
    assert code == 0, results
    by_items = {}
    for path in histories.glob("*.json"):
        document = json.loads(path.read_text())
        by_items[(document["input"]["id"], document["status"])] = (results[path.name], len(document["events"]))
    # The recorded price decides the branch: the big order waits for approval, the small one cools off; each
    # completed execution's every operation is issued again, no more.
    for key in (("o-big", "completed"), ("o-small", "completed")):
        result, recorded_events = by_items[key]
        assert (result["status"], result["events"], result["notes"]) == ("passed", recorded_events, [])
    assert by_items[("o-big", "completed")][1] == 12 and by_items[("o-small", "completed")][1] == 8
