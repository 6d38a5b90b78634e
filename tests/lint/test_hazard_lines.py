"""Every hazard line a finding stands for is named: the hazards of one rule in a nested coroutine started with
``asyncio.gather`` (reported at the gather line), the same call at several lines of a helper, and the other
call sites of a helper reported once. Each format shows them (text ``also at``, JSON ``also_at``, SARIF
``relatedLocations``, a GitHub annotation per line) and the findings' fingerprints stay what they were."""

from __future__ import annotations

import re

from lintkit import line_of, run_replaytest
from test_sarif import assert_valid_for_code_scanning

CLOCK_HELPER = "import time\n\n\ndef stamp() -> float:\n    return time.time()\n"

GATHERED = '''\
import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

from temporalio import workflow

from app.clock import stamp


@workflow.defn
class Flow:
    @workflow.run
    async def run(self) -> float:
        async def one() -> float:
            start = time.time()
            pool = ThreadPoolExecutor()
            middle = time.time()
            ThreadPoolExecutor()
            return start + middle + time.time()

        first = stamp()
        results = await asyncio.gather(one(), one())
        second = stamp()
        return first + second + sum(results)
'''
GATHER = line_of(GATHERED, "asyncio.gather")
FIRST_STAMP, SECOND_STAMP = line_of(GATHERED, "first = stamp()"), line_of(GATHERED, "second = stamp()")
CLOCKS = [n for n, text in enumerate(GATHERED.splitlines(), 1) if "time.time()" in text]
POOLS = [n for n, text in enumerate(GATHERED.splitlines(), 1) if "ThreadPoolExecutor()" in text]
# What these findings' fingerprints were before their other lines were named (pinned: baselines and code
# scanning alerts made then must still match).
FINGERPRINTS = {
    ("RT101", FIRST_STAMP): "b310799ab55d23add166dd70270e9b90",
    ("RT101", GATHER): "b0c437045cb485be0dbd48b7592fba0e",
    ("RT302", GATHER): "39a558c6849aab9af5704d3b9374a32d",
}


def _project(make_project):
    return make_project({"app/__init__.py": "", "app/clock.py": CLOCK_HELPER, "app/wf.py": GATHERED})


def _lint(project, output: str):
    run = run_replaytest("lint", "--format", output, "--no-cache", ".", cwd=project)
    assert run.returncode == 1, run.describe()
    return run


def test_json_names_every_hazard_line_and_every_other_call_site(make_project) -> None:
    report = _lint(_project(make_project), "json").json()
    by_place = {(d["rule"], d["line"]): d for d in report["diagnostics"]}
    assert set(by_place) == set(FINGERPRINTS)  # still one finding per rule and call
    gathered_clock = by_place[("RT101", GATHER)]["also_at"]
    # Three clock reads in the coroutine (the same call at three lines), then the second gathered call.
    assert [(p["path"], p["line"]) for p in gathered_clock] == [("app/wf.py", n) for n in CLOCKS] + [("app/wf.py", GATHER)]
    assert [p["message"] for p in gathered_clock] == ["time.time()"] * 3 + ["call site in app.wf.Flow.run"]
    assert [p["line"] for p in by_place[("RT302", GATHER)]["also_at"]] == [*POOLS, GATHER]
    helper = by_place[("RT101", FIRST_STAMP)]["also_at"]
    assert [(p["path"], p["line"], p["column"]) for p in helper] == [
        ("app/clock.py", 5, 12), ("app/wf.py", SECOND_STAMP, GATHERED.splitlines()[SECOND_STAMP - 1].index("stamp") + 1)]


def test_text_lists_the_lines_beneath_the_finding(make_project) -> None:
    text = _lint(_project(make_project), "text").stdout
    assert f"    also at: app/clock.py:5, app/wf.py:{SECOND_STAMP}\n" in text, text
    lines = ", ".join(f"app/wf.py:{n}" for n in CLOCKS)  # the finding's own line (the second call) left out
    assert f"    also at: {lines}\n" in text, text


def test_sarif_related_locations_are_linked_from_the_message(make_project) -> None:
    log = _lint(_project(make_project), "sarif").json()
    assert_valid_for_code_scanning(log)
    results = log["runs"][0]["results"]
    for result in results:
        related = result["relatedLocations"]
        links = re.findall(r"\[([^\]]+)\]\((\d+)\)", result["message"]["text"])
        assert [int(number) for _, number in links] == [place["id"] for place in related] == list(range(1, len(related) + 1))
        for (text, _), place in zip(links, related):
            physical = place["physicalLocation"]
            assert text == f"{physical['artifactLocation']['uri']}:{physical['region']['startLine']}"
    [clock] = [r for r in results if r["ruleId"] == "RT101" and r["locations"][0]["physicalLocation"]["region"]["startLine"] == GATHER]
    assert [p["physicalLocation"]["region"]["startLine"] for p in clock["relatedLocations"]] == [*CLOCKS, GATHER]


def test_github_annotates_each_line(make_project) -> None:
    out = _lint(_project(make_project), "github").stdout
    also = re.findall(r"^::error file=([^,]+),line=(\d+),col=\d+,title=(RT\d+) \(also at\)::", out, re.M)
    assert sorted((path, int(line), rule) for path, line, rule in also) == sorted(
        [("app/wf.py", n, "RT101") for n in [*CLOCKS, GATHER]] + [("app/wf.py", n, "RT302") for n in [*POOLS, GATHER]]
        + [("app/clock.py", 5, "RT101"), ("app/wf.py", SECOND_STAMP, "RT101")])


def test_fingerprints_are_those_before_the_lines_were_named(make_project) -> None:
    log = _lint(_project(make_project), "sarif").json()
    found = {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]):
             r["partialFingerprints"]["replaytestFingerprint/v1"] for r in log["runs"][0]["results"]}
    assert found == {place: f"{value}:0" for place, value in FINGERPRINTS.items()}


# RT205: a graph node reaching effects through a helper before its interrupt() (each hazard line of the rule
# behind the call is named, as for the rules above), and a node in a file the run does not check (reported at
# its add_node call, its effect's line named).
NODE_HELPER = "import time\nimport uuid\n\n\ndef stamp() -> float:\n    started = time.time()\n    token = uuid.uuid4()\n    return started + time.time()\n"
GRAPH = '''\
import time

from langgraph.graph import StateGraph
from langgraph.types import interrupt

from app.helpers import stamp


def review(state: dict) -> dict:
    first = time.time()
    when = stamp()  # review
    answer = interrupt("ok?")
    return {"answer": answer, "when": when + first}


def approve(state: dict) -> dict:
    stamped = stamp()
    interrupt("sure?")
    return {"when": stamped}


builder = StateGraph(dict)
builder.add_node("review", review)
builder.add_node("approve", approve)
'''
REVIEW_STAMP, APPROVE_STAMP = line_of(GRAPH, "when = stamp()  # review"), line_of(GRAPH, "stamped = stamp()")


def _graph_project(make_project):
    return make_project({"app/__init__.py": "", "app/helpers.py": NODE_HELPER, "app/graph.py": GRAPH})


def test_rt205_names_each_hazard_line_behind_a_helper_call(make_project) -> None:
    report = _lint(_graph_project(make_project), "json").json()
    found = {(d["line"], d["message"].split(" ")[2]): d for d in report["diagnostics"] if d["rule"] == "RT205"}
    clock = found[(REVIEW_STAMP, "time.time(),")]
    # Both clock reads of the helper (the one the message names first included), then the other call site.
    assert [(p["path"], p["line"], p["message"]) for p in clock["also_at"]] == [
        ("app/helpers.py", 6, "time.time()"), ("app/helpers.py", 8, "time.time()"),
        ("app/graph.py", APPROVE_STAMP, "call site in app.graph.approve")]
    assert clock["message"].endswith("(and 1 more: time.time() at app/helpers.py:8)")
    fresh = found[(REVIEW_STAMP, "uuid.uuid4(),")]
    assert [(p["path"], p["line"]) for p in fresh["also_at"]] == [("app/helpers.py", 7), ("app/graph.py", APPROVE_STAMP)]
    # A direct effect of the node stands for its own line only.
    [direct] = [d for d in report["diagnostics"] if d["rule"] == "RT205" and d["line"] == line_of(GRAPH, "first = time")]
    assert direct["also_at"] == []


def test_rt205_lines_in_every_format(make_project) -> None:
    project = _graph_project(make_project)
    text = _lint(project, "text").stdout
    assert f"    also at: app/helpers.py:6, app/helpers.py:8, app/graph.py:{APPROVE_STAMP}\n" in text, text
    log = _lint(project, "sarif").json()
    assert_valid_for_code_scanning(log)
    [clock] = [r for r in log["runs"][0]["results"] if r["ruleId"] == "RT205" and "time.time" in r["message"]["text"]
               and r["locations"][0]["physicalLocation"]["region"]["startLine"] == REVIEW_STAMP]
    assert [(p["physicalLocation"]["artifactLocation"]["uri"], p["physicalLocation"]["region"]["startLine"])
            for p in clock["relatedLocations"]] == [("app/helpers.py", 6), ("app/helpers.py", 8), ("app/graph.py", APPROVE_STAMP)]
    out = _lint(project, "github").stdout
    also = re.findall(r"^::error file=([^,]+),line=(\d+),col=\d+,title=RT205 \(also at\)::", out, re.M)
    assert sorted((path, int(line)) for path, line in also) == sorted(
        [("app/helpers.py", 6), ("app/helpers.py", 8), ("app/helpers.py", 7), ("app/graph.py", APPROVE_STAMP),
         ("app/graph.py", APPROVE_STAMP)])


def test_rt205_at_the_registration_names_the_node_functions_lines(make_project) -> None:
    node = "import time\nfrom langgraph.types import interrupt\n\n\ndef review(state):\n    first = time.time()\n    later = time.time()\n    interrupt('ok?')\n    return {}\n"
    graph = "from langgraph.graph import StateGraph\n\nfrom nodes import review\n\nbuilder = StateGraph(dict)\nbuilder.add_node('review', review)\n"
    project = make_project({"app/graph.py": graph, "nodes.py": node},
                           pyproject="[tool.replaytest]\nsrc = ['.']\n")
    run = run_replaytest("lint", "--format", "json", "--no-cache", "app", cwd=project)
    assert run.returncode == 1, run.describe()
    findings = [d for d in run.json()["diagnostics"] if d["rule"] == "RT205"]
    # One finding per effect of the node, each at the registration and naming the effect's own line.
    assert {(d["path"], d["line"]) for d in findings} == {("app/graph.py", 6)}
    assert sorted((p["path"], p["line"]) for d in findings for p in d["also_at"]) == [("nodes.py", 6), ("nodes.py", 7)]
