"""Graph-API (``StateGraph``) threads are not resume-rehearsed yet: a parked thread that checks green says so
in its notes instead of passing with a silent replay-only verdict."""

from __future__ import annotations

import json

from graph_kit import SUPPORT_SPEC, Recorded, recorded, run_cli  # noqa: F401 - recorded is a fixture

from replaytest.plugins.langgraph.replayer import GRAPH_NOT_REHEARSED_NOTE


def test_a_parked_graph_thread_says_its_resume_was_not_rehearsed(recorded: Recorded) -> None:  # noqa: F811
    code, stdout, stderr = run_cli("replay", str(recorded.histories), "--workflows", SUPPORT_SPEC, "--format", "json",
                                   "--rehearse")
    assert code == 0, stderr
    results = {result["workflow"]["id"]: result for result in json.loads(stdout)["results"]}
    parked = results["refund-A-17"]
    assert parked["status"] == "passed" and parked["rehearsal"] is None
    assert GRAPH_NOT_REHEARSED_NOTE in parked["notes"]
    assert GRAPH_NOT_REHEARSED_NOTE not in results["refund-B-90"]["notes"]  # finished: nothing to resume
