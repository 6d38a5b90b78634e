"""``--format github``: one workflow-command annotation per finding,
``::error file=…,line=…,col=…[,endLine=…,endColumn=…],title=…::message``, with the runner's escaping:
``%``, CR and LF in the message; additionally ``:`` and ``,`` in property values."""

from __future__ import annotations

import re

from lintkit import CLOCK_WORKFLOW, run_replaytest

ANNOTATION = re.compile(
    r"^::(?P<level>error|warning|notice) "
    r"file=(?P<file>[^,:]+),line=(?P<line>\d+),col=(?P<col>\d+)"
    r"(?:,endLine=(?P<end_line>\d+),endColumn=(?P<end_col>\d+))?"
    r",title=(?P<title>[^,:]+)"
    r"::(?P<message>.*)$"
)


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


# A call spelled over several lines with %, comma and colon in it, in case the message quotes the source.
ODD_WORKFLOW = '''\
"""A workflow whose findings sit in a file whose path needs escaping."""
import time

from temporalio import workflow


@workflow.defn
class Odd:
    @workflow.run
    async def run(self) -> str:
        label = "100%: a, b"
        started = time.strftime(
            "%H:%M, %S",
        )
        return f"{label} {started} {time.time()}"
'''


# Idempotency-key messages quote the key's name, so odd header names put %, comma, colon and a newline
# into the message text itself.
ODD_KEYS_ACTIVITY = '''\
"""An activity whose fresh idempotency keys have names that need escaping in annotations."""
import uuid

import requests
from temporalio import activity


@activity.defn
def pay() -> None:
    requests.post("https://pay", headers={"idempotency-key: 100%, v2": str(uuid.uuid4())})
    requests.post("https://pay", headers={"""Idempotency-Key
""": str(uuid.uuid4())})
'''


def _annotations(stdout: str) -> list[re.Match[str]]:
    lines = [line for line in stdout.splitlines() if line.startswith("::")]
    matches = [ANNOTATION.match(line) for line in lines]
    bad = [line for line, match in zip(lines, matches) if match is None]
    assert not bad, f"malformed annotations: {bad}"
    return [match for match in matches if match]


def test_annotations_match_the_json_report_with_escaping(make_project) -> None:
    project = make_project(
        {"we,ird:dir%/wf.py": ODD_WORKFLOW, "app/wf.py": CLOCK_WORKFLOW, "app/pay.py": ODD_KEYS_ACTIVITY}
    )
    github = run_replaytest("lint", "--format", "github", "--no-cache", ".", cwd=project)
    report = run_replaytest("lint", "--format", "json", "--no-cache", ".", cwd=project).json()
    assert github.returncode == 1, github.describe()
    annotations = _annotations(github.stdout)
    assert len(annotations) == len(report["diagnostics"]) >= 4
    by_place = {(m["file"], int(m["line"]), int(m["col"])): m for m in annotations}
    for diagnostic in report["diagnostics"]:
        key = (escape_property(diagnostic["path"]), diagnostic["line"], diagnostic["column"])
        assert key in by_place, f"no annotation for {key}; have {sorted(by_place)}"
        match = by_place[key]
        assert escape_data(diagnostic["message"]) in match["message"], (diagnostic["message"], match["message"])
        assert match["level"] == {"error": "error", "warning": "warning"}.get(diagnostic["severity"], "notice")
        if match["end_line"]:
            assert (int(match["end_line"]), int(match["end_col"])) == (diagnostic["end_line"], diagnostic["end_column"])
    messages = "".join(d["message"] for d in report["diagnostics"])
    assert all(char in messages for char in "%,:\n"), "the input no longer exercises message escaping"
    odd = [m for m in annotations if m["file"].startswith("we")]
    assert odd and all(m["file"] == "we%2Cird%3Adir%25/wf.py" for m in odd), [m["file"] for m in odd]


def test_escaping_helpers_follow_the_runner_rules() -> None:
    # The expectations above rely on these; pin them to the documented escapes.
    assert escape_data("100%\r\nnext: a, b") == "100%25%0D%0Anext: a, b"
    assert escape_property("a,b:c%d\n") == "a%2Cb%3Ac%25d%0A"


def test_clean_project_prints_no_annotations(make_project) -> None:
    project = make_project({"app/notes.py": '"""Nothing to see."""\n'})
    run = run_replaytest("lint", "--format", "github", "--no-cache", ".", cwd=project)
    assert run.returncode == 0, run.describe()
    assert [line for line in run.stdout.splitlines() if line.startswith("::")] == []
