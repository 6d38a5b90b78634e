"""The engine is the judge on LangGraph's functional API: for each kind of change, ``replaytest impact``
predicts what each of the dispute graph's two threads parked at the reviewer's interrupt does when it resumes on
the changed code, and LangGraph itself then resumes each (on a copy of the recorded SqliteSaver, with the answer
the rehearsal delivered). LangGraph raises no error where the code changed before the interrupt: it runs the
task it finds no recorded result for. So the engine's outcome is read from the task bodies it runs: ``breaks``
when the first is one the thread had already passed (code before the interrupt runs again, after the reviewer
answered), ``new`` when the changed task runs, else ``old``. LangGraph has no patch API: no guarded variant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from impact_kit import ScenarioKit, edit_once, predicted_resume, run_replaytest
from impact_langgraph_kit import CLASSIFY, INTERRUPT, LOOKUP, V1
from test_impact_e2e_rehearsal_langgraph import really_resumed

FRAUD = '    record_audit(dispute["invoice_id"], "fraud screen").result()\n'
AUDIT = '    record_audit(dispute["invoice_id"], decision).result()\n'
LARGE = ('    if decision == "approve" and dispute["amount"] > 1000:\n'
         '        record_audit(dispute["invoice_id"], "large credit").result()\n')


def _passed(body: str) -> bool:
    """A body of a task the parked threads had already passed (code before the interrupt)."""
    return body.startswith(("classify ", "lookup ")) or body.endswith(" fraud screen")


# A nested graph, as LangGraph documents calling one from an entrypoint: another entrypoint, invoked after the
# interrupt, that audits the decision.
NESTED_GRAPH = '''@entrypoint()
def review_audit(review: dict) -> str:
    return record_audit(review["invoice_id"], review["decision"]).result()


@entrypoint()
def dispute_agent('''
NESTED = "nested graph call added after the interrupt"
NESTED_CALL = '    review_audit.invoke({"invoice_id": dispute["invoice_id"], "decision": decision})\n'


def _with_nested_graph(source: str) -> str:
    return edit_once(edit_once(source, "@entrypoint()\ndef dispute_agent(", NESTED_GRAPH), INTERRUPT, INTERRUPT + NESTED_CALL)


def _renamed(source: str) -> str:
    return source.replace("def lookup_invoice(", "def find_invoice(").replace("lookup_invoice(dispute", "find_invoice(dispute")


# change -> (the code, the task that tells the new path and the start of its body, what impact and LangGraph must
# both say for dispute-4 (300) and dispute-5 (1500), both answered "approve")
CHANGES = {
    "task inserted before the interrupt": (edit_once(V1, INTERRUPT, FRAUD + INTERRUPT), ("record_audit", "audit "),
                                           ("breaks", "breaks")),
    "task inserted after the interrupt": (edit_once(V1, INTERRUPT, INTERRUPT + AUDIT), ("record_audit", "audit "),
                                          ("new", "new")),
    "task renamed": (_renamed(V1), ("find_invoice", "lookup "), ("breaks", "breaks")),
    "two tasks swapped": (edit_once(V1, CLASSIFY + LOOKUP, LOOKUP + CLASSIFY), ("never", "never"), ("breaks", "breaks")),
    "branch condition changed": (edit_once(V1, INTERRUPT, INTERRUPT + LARGE), ("record_audit", "audit "), ("old", "new")),
    # The rehearsal names the nested graph's first task, which LangGraph runs next.
    NESTED: (_with_nested_graph(V1), ("record_audit", "audit "), ("new", "new")),
}


def langgraph_outcome(kit: ScenarioKit, tmp_path: Path, thread: str, body: str) -> str:
    ran = really_resumed(kit, tmp_path, thread, "approve")
    if ran and _passed(ran[0]):
        return "breaks"
    return "new" if any(line.startswith(body) for line in ran) else "old"


def predicted(workflow: dict, thread: str, task: str) -> str:
    """impact's verdict; a resume on which the engine issues the changed task next is the new path."""
    verdict = predicted_resume(workflow, thread)
    if verdict == "old" and any(thread in entry["runs"] and f"the engine issues task {task!r} next" in entry["text"]
                                for entry in workflow["resume"]):
        return "new"
    return verdict


@pytest.mark.parametrize("change", list(CHANGES))
def test_impact_predicts_each_parked_thread_as_langgraph_resumes_it(langgraph_kit: ScenarioKit, tmp_path: Path, change: str) -> None:
    code, (task, body), expected = CHANGES[change]
    (langgraph_kit.root / langgraph_kit.code_file).write_text(code, encoding="utf-8")
    done = run_replaytest(langgraph_kit.root, "impact", "--output-format", "json")
    document = json.loads(done.stdout)
    [workflow] = document["workflows"]
    assert (done.returncode != 2, document["could_not_check"]) == (True, []), done.stdout + done.stderr
    if change == NESTED:
        # A finished thread replayed on code that now starts a nested graph holds no run of it, and its import
        # says it found none in the thread's checkpoint namespaces: the graph is a command the thread never
        # issued, at the line that invokes it.
        line = 1 + code.splitlines().index(NESTED_CALL.rstrip("\n"))
        [group] = workflow["groups"]
        assert (group["kind"], group["path"], group["line"], sorted(group["runs"]["finished"]),
                group["runs"]["in_flight"]) == (
            "extra-command", langgraph_kit.code_file, line, sorted(langgraph_kit.finished), []), group
        assert "never ran" in group["message"], group
    threads = ("dispute-4", "dispute-5")
    predictions = tuple(predicted(workflow, thread, task) for thread in threads)
    engine = tuple(langgraph_outcome(langgraph_kit, tmp_path, thread, body) for thread in threads)
    assert (predictions, engine) == (expected, expected), workflow
