"""RT205 on LangGraph graph nodes: effects before an ``interrupt()`` run again when the thread resumes.

The premise is checked on LangGraph itself first (a real graph, a real ``InMemorySaver``): resuming a
paused thread re-runs the paused node from its top, a ``@task``'s recorded result is returned instead of
running it again, and code after the ``interrupt()`` runs once. Then the linter must report exactly the
lines that ran twice on that same module, and the node forms, aliases, helpers and loops the rule knows,
each project with its expected findings marked by hand (``# expect:``, see ``test_fixture_projects``).
The README's example is linted as the README shows it and compared with hand-written lines.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from lintkit import run_replaytest, write_files
from test_fixture_projects import assert_findings_match_marks, linted_findings

from replaytest.config import load_config
from replaytest.lint.engine import build_context, lint_paths
from replaytest.lint.model import Diagnostic
from replaytest.plugins import load_plugins

ROOT = Path(__file__).resolve().parents[2]
PROFILES = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]
RERUN = "which re-runs from its top on resume, so this runs again; move it after the interrupt() or into a @task " \
        "function (or an earlier node)"
INTO_TASK = "or into a @task function (or an earlier node)"


def lint(project: Path, *paths: str, use_cache: bool = False) -> list[Diagnostic]:
    config = load_config(project)
    targets = [project / path for path in paths] or [project]
    result = lint_paths(targets, config, PROFILES, use_cache=use_cache, jobs=1, context=build_context(config, PROFILES),
                        cwd=project)
    assert not result.errors, result.problems
    return result.diagnostics


def check_marks(project: Path, *paths: str) -> list[Diagnostic]:
    diagnostics = lint(project, *paths)
    assert_findings_match_marks(project, linted_findings(diagnostics))
    return diagnostics


def project_with(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    return write_files(tmp_path, files)


# --- LangGraph's behaviour, and the linter on the same module --------------------------------------

REFUND_AGENT = '''
import uuid
from typing import TypedDict

from langgraph.func import task
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

EFFECTS: list[str] = []


class Refund(TypedDict, total=False):
    ticket: str
    amount: float
    case: str
    reference: str
    decision: str


@task
def open_case(ticket: str) -> str:
    EFFECTS.append(f"case opened for {ticket}")
    return f"case-{ticket}"


def classify(state: Refund) -> dict:
    EFFECTS.append("classified")
    return {"amount": 900.0}


def human_review(state: Refund) -> Command:
    EFFECTS.append("review started")  # expect: RT205:5
    reference = uuid.uuid4().hex  # expect: RT205:17
    case = open_case(state["ticket"]).result()
    decision = interrupt({"case": case, "reference": reference, "amount": state["amount"]})
    EFFECTS.append(f"decided {decision}")
    update = {"case": case, "reference": reference, "decision": decision}
    return Command(goto="pay" if decision == "approve" else END, update=update)


def pay(state: Refund) -> dict:
    EFFECTS.append(f"paid {state['amount']}")
    return {}


builder = StateGraph(Refund)
builder.add_node(classify)
builder.add_node("human_review", human_review)
builder.add_node("pay", pay)
builder.add_edge(START, "classify")
builder.add_edge("classify", "human_review")
builder.add_edge("pay", END)
'''


def _import(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def test_langgraph_reruns_the_paused_node_from_its_top_and_the_linter_marks_those_lines(tmp_path: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    project = project_with(tmp_path, {"app/refund.py": REFUND_AGENT})
    agent = _import(project / "app" / "refund.py", "refund_agent_under_test")
    graph = agent.builder.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "refund-7"}}

    paused = graph.invoke({"ticket": "T-7"}, thread)
    (pending,) = paused["__interrupt__"]
    assert agent.EFFECTS == ["classified", "review started", "case opened for T-7"]
    agent.EFFECTS.clear()

    graph.invoke(Command(resume="approve"), thread)
    # The node ran again from its top; the task's recorded result came back; the rest ran once.
    assert agent.EFFECTS == ["review started", "decided approve", "paid 900.0"]
    state = graph.get_state(thread).values
    assert state["case"] == "case-T-7" == pending.value["case"]
    # The reference the reviewer saw is not the one the resumed node went on with: uuid4() ran again.
    assert state["reference"] != pending.value["reference"]

    # The two lines that ran twice are RT205's findings; the task call, the line after the
    # interrupt() and the nodes without one are quiet.
    check_marks(project)


def test_only_a_checkpointed_thread_resumes_so_the_rule_asks_for_no_checkpointer(tmp_path: Path) -> None:
    import pytest
    from langgraph.types import Command

    project = project_with(tmp_path, {"app/refund.py": REFUND_AGENT})
    agent = _import(project / "app" / "refund.py", "refund_agent_without_saver")
    graph = agent.builder.compile()  # LangGraph Platform would pass its own checkpointer here
    assert graph.invoke({"ticket": "T-8"})["__interrupt__"]
    with pytest.raises(RuntimeError, match="without checkpointer"):
        graph.invoke(Command(resume="approve"), {"configurable": {"thread_id": "T-8"}})
    # The module compiles no graph at all; its nodes are checked all the same.
    assert [(d.line, d.rule) for d in lint(project)] == [(31, "RT205"), (32, "RT205")]


# --- the README example ---------------------------------------------------------------------------


def test_the_readme_example_reports_the_lines_and_messages_it_shows(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- rt205-example -->\n```python\n", 1)[1]
    code, shown = block.split("```\n\n```text\n$ replaytest lint app\n", 1)
    header, source = code.split("\n", 1)
    assert header == "# app/support.py"
    project = project_with(tmp_path, {"app/support.py": source})
    run = run_replaytest("lint", "--no-cache", "app", cwd=project)
    expected = [
        "app/support.py:20:12: RT205 llm.invoke() calls a language model before interrupt() at line 23 in graph node "
        f"'human_review', {RERUN}",
        "app/support.py:21:12: RT205 uuid.uuid4() creates a fresh UUID before interrupt() at line 23 in graph node "
        f"'human_review', {RERUN}",
        "app/support.py:22:5: RT205 requests.post() does network I/O before interrupt() at line 23 in graph node "
        f"'human_review', {RERUN}",
        "Found 3 findings (1 file checked).",
    ]
    assert run.returncode == 1, run.describe()
    assert run.stdout.splitlines() == expected
    assert shown.split("\n```", 1)[0].splitlines() == expected


def test_the_json_report_names_the_rule_category_and_framework(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"app/refund.py": REFUND_AGENT})
    report = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project).json()
    first = report["diagnostics"][0]
    assert (first["rule"], first["category"], first["framework"]) == ("RT205", "rerun-on-resume", "langgraph")
    assert (first["line"], first["column"], first["trace"]) == (31, 5, [])
    assert first["message"] == (
        f"EFFECTS.append(\"review started\") writes module-level state before interrupt() at line 34 in graph node 'human_review', "
        f"{RERUN}")


# --- node forms and names ------------------------------------------------------------------------


def test_every_way_of_adding_a_node_is_followed(tmp_path: Path) -> None:
    project = project_with(tmp_path, {
        "app/nodes.py": '''
            import random
            import time

            from langgraph.types import interrupt


            def triage(state: dict) -> dict:
                started = time.time()  # expect: RT205:15
                answer = interrupt({"ticket": state["ticket"]})
                return {"answer": answer, "started": started}


            def escalate(state: dict, team: str) -> dict:
                pick = random.choice(["ana", "bo"])  # expect: RT205:12
                return {"owner": interrupt({"team": team, "pick": pick})}
            ''',
        "app/graph.py": '''
            import functools
            import uuid

            import httpx
            from langgraph.graph.state import StateGraph
            from langgraph.types import interrupt

            from app.nodes import escalate, triage


            def confirm(state: dict) -> dict:
                token = uuid.uuid4().hex  # expect: RT205:13
                return {"ok": interrupt({"token": token})}


            def lambda_target(state: dict) -> dict:
                httpx.get("https://status.example.com")  # expect: RT205:5
                return {"seen": interrupt("status?")}


            class Reviewer:
                def __init__(self, url: str) -> None:
                    self.url = url

                def __call__(self, state: dict) -> dict:
                    httpx.post(self.url, json=state)  # expect: RT205:9
                    return {"verdict": interrupt("verdict?")}

                def second_look(self, state: dict) -> dict:
                    httpx.post(self.url, json={"again": True})  # expect: RT205:9
                    return {"second": interrupt("again?")}

                def build(self) -> StateGraph:
                    graph = StateGraph(dict)
                    graph.add_node("second_look", self.second_look)
                    return graph


            builder = StateGraph(dict)
            builder.add_node(triage)
            builder.add_node("escalate", functools.partial(escalate, team="billing"))
            builder.add_node("status", lambda state: lambda_target(state))
            builder.add_node("review", Reviewer("https://review.example.com"))
            builder.add_sequence([("confirm", confirm)])
            ''',
    })
    diagnostics = check_marks(project)
    nodes = {re.search(r"graph node '([^']+)'", d.message).group(1) for d in diagnostics}  # type: ignore[union-attr]
    assert nodes == {"triage", "escalate", "status", "review", "second_look", "confirm"}


def test_interrupt_is_known_under_any_alias_and_command_and_send_are_not_effects(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"app/agent.py": '''
        import time

        import langgraph.types as lgt
        from langgraph.graph import StateGraph
        from langgraph.types import Command, Send
        from langgraph.types import interrupt as ask_human


        def plan(state: dict) -> list:
            return [Send("review", {"item": item}) for item in state["items"]]


        def review(state: dict) -> Command:
            seen = time.monotonic()  # expect: RT205:12
            answer = ask_human({"item": state["item"], "seen": seen})
            return Command(goto="__end__", update={"answer": answer})


        def audit(state: dict) -> dict:
            stamp = time.time_ns()  # expect: RT205:13
            return {"audit": lgt.interrupt({"stamp": stamp})}


        builder = StateGraph(dict)
        builder.add_node("plan", plan)
        builder.add_node("review", review)
        builder.add_node("audit", audit)
        builder.add_conditional_edges("plan", plan)
        '''})
    check_marks(project)


# --- what is quiet -------------------------------------------------------------------------------


def test_quiet_after_the_interrupt_inside_a_task_and_in_nodes_without_one(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"app/agent.py": '''
        import os
        import time
        import uuid

        import requests
        from langgraph.func import task
        from langgraph.graph import StateGraph
        from langgraph.types import interrupt


        @task
        def draft_reply(ticket: str) -> str:
            return requests.post("https://llm.example.com/draft", json={"ticket": ticket}).text


        @task
        def stamp() -> float:
            return time.time()


        def fetch(state: dict) -> dict:
            # No interrupt(): the node runs once per step and LangGraph checkpoints what it returns.
            body = requests.get(f"https://crm.example.com/{uuid.uuid4()}").json()
            return {"body": body, "at": time.time()}


        def review(state: dict) -> dict:
            model = os.environ.get("REVIEW_MODEL", "small")
            draft = draft_reply(state["ticket"]).result()
            asked = stamp().result()
            answer = interrupt({"draft": draft, "model": model, "asked": asked})
            requests.post("https://crm.example.com/answers", json={"answer": answer, "id": str(uuid.uuid4())})
            return {"answer": answer, "answered": time.time()}


        def not_a_node(state: dict) -> dict:
            requests.post("https://crm.example.com/never-added")
            return {"x": interrupt("never asked")}


        builder = StateGraph(dict)
        builder.add_node("fetch", fetch)
        builder.add_node("review", review)
        '''})
    assert lint(project) == []


def test_file_writes_are_reported_and_file_reads_are_not(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"app/agent.py": '''
        import json
        from pathlib import Path

        import yaml
        from langgraph.graph import StateGraph
        from langgraph.types import interrupt


        def load_settings() -> dict:
            with open("settings.yaml") as stream:
                return yaml.safe_load(stream)


        def review(state: dict) -> dict:
            settings = load_settings()
            template = Path("templates/review.txt").read_text()
            with open("audit.log", "a") as log:  # expect: RT205:10
                log.write(json.dumps(state))
            Path("last_review.json").write_text(json.dumps(state))  # expect: RT205:5
            mode = settings.get("mode", "w")
            with open("drafts.txt", mode) as drafts:  # expect: RT205:10
                drafts.write(template)
            with open("settings.yaml", mode="r", encoding="utf-8") as again:
                again.read()
            return {"answer": interrupt(template.format(**state))}


        builder = StateGraph(dict)
        builder.add_node("review", review)
        '''})
    check_marks(project)


# --- helpers and loops ---------------------------------------------------------------------------


def test_helpers_reached_before_the_interrupt_and_helpers_that_pause(tmp_path: Path) -> None:
    project = project_with(tmp_path, {
        "app/crm.py": '''
            import time

            import requests
            from langgraph.types import interrupt


            def log_case(ticket: str) -> None:
                requests.post("https://crm.example.com/cases", json={"ticket": ticket})


            def ask_reviewer(question: str) -> str:
                asked_at = time.time()
                answer = interrupt({"question": question, "asked_at": asked_at})
                log_case(answer)
                return answer
            ''',
        "app/graph.py": '''
            import uuid

            import requests
            from langgraph.graph import StateGraph

            from app.crm import ask_reviewer, log_case


            def review(state: dict) -> dict:
                log_case(state["ticket"])  # expect: RT205:5 via app.crm.log_case
                reference = str(uuid.uuid4())  # expect: RT205:21
                answer = ask_reviewer(f"Refund {state['ticket']}? ({reference})")  # expect: RT205:14 via ask_reviewer
                requests.post("https://crm.example.com/answers", json={"answer": answer})
                return {"answer": answer}


            builder = StateGraph(dict)
            builder.add_node("review", review)
            ''',
    })
    diagnostics = check_marks(project)
    by_line = {d.line: d for d in diagnostics}
    assert by_line[11].message == (
        "uuid.uuid4() creates a fresh UUID before ask_reviewer(), which calls interrupt() at line 12 in graph node "
        "'review', which re-runs from its top on resume, so this runs again; move it after the ask_reviewer() "
        f"{INTO_TASK}")
    assert by_line[12].trace == ("app.graph.review", "app.crm.ask_reviewer", "time.time")
    assert by_line[12].message == (
        "ask_reviewer() reaches time.time(), which reads the wall clock, before ask_reviewer(), which calls "
        "interrupt() at line 12 in graph node 'review', which re-runs from its top on resume, so this runs again; "
        f"move it after the ask_reviewer() {INTO_TASK}")


def test_a_loop_holding_an_interrupt_reruns_whole(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"app/agent.py": '''
        import requests
        from langgraph.graph import StateGraph
        from langgraph.types import interrupt


        def collect(state: dict) -> dict:
            answers = []
            for question in state["questions"]:
                answers.append(interrupt(question))
                requests.post("https://forms.example.com/answers", json=answers)  # expect: RT205:9
            requests.post("https://forms.example.com/done", json=answers)
            return {"answers": answers}


        builder = StateGraph(dict)
        builder.add_node("collect", collect)
        '''})
    (finding,) = check_marks(project)
    assert finding.message == (
        "requests.post() does network I/O before interrupt() again in the next turn of the loop at line 8 in graph "
        f"node 'collect', which re-runs from its top on resume, so this runs again; move it after the loop {INTO_TASK}")


# --- where it is reported, caching, selection ----------------------------------------------------


def test_a_node_in_a_file_not_checked_is_reported_at_the_add_node_call(tmp_path: Path) -> None:
    project = project_with(tmp_path, {
        "lib/review_nodes.py": '''
            import requests
            from langgraph.types import interrupt


            def review(state: dict) -> dict:
                requests.post("https://crm.example.com/cases")
                return {"answer": interrupt("ok?")}
            ''',
        "app/graph.py": '''
            from langgraph.graph import StateGraph

            from lib.review_nodes import review

            builder = StateGraph(dict)
            builder.add_node("review", review)  # expect: RT205:1 via review
            ''',
    })
    diagnostics = check_marks(project, "app")
    assert diagnostics[0].message == (
        "review() reaches requests.post(), which does network I/O, before interrupt() at lib/review_nodes.py:7 in "
        "graph node "
        f"'review', {RERUN}")


def test_cached_summaries_give_the_same_findings_and_rt205_can_be_ignored(tmp_path: Path) -> None:
    project = project_with(tmp_path, {"app/refund.py": REFUND_AGENT})
    cold = lint(project, use_cache=True)
    warm = lint(project, use_cache=True)
    assert [(d.line, d.column, d.message) for d in warm] == [(d.line, d.column, d.message) for d in cold]
    assert [(d.line, d.column) for d in cold] == [(31, 5), (32, 17)]
    (project / "pyproject.toml").write_text('[tool.replaytest]\nignore = ["rerun-on-resume"]\n', encoding="utf-8")
    assert lint(project) == []


def test_the_rule_documentation_says_why(tmp_path: Path) -> None:
    run = run_replaytest("rules", "RT205", cwd=tmp_path)
    assert run.returncode == 0, run.describe()
    assert "runs the interrupted node again" in run.stdout
    assert textwrap.dedent("""\
        def review(state: State) -> dict:
            draft = llm.invoke(state["messages"])""") in run.stdout
