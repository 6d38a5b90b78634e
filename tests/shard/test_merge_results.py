"""``replaytest merge-results`` never turns a failure into green: it works every count out again from the
per-history results (an edited shard summary changes nothing), refuses with exit 2 and one line naming the
file a set of shard reports that does not add up (a history that changed between two shard jobs falls in
neither shard or in both), exits as ``check`` over all the histories would (1 a divergence, 2 a stale or
unreadable history, 0 only all passed), and answers a malformed report with that one line, never a traceback."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from shard_kit import HISTORIES

from replaytest.cli import cli
from replaytest.replay.shard import shard_of

FORMATS = ("json", "sarif", "junit")


def _check(project: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "replaytest", "check", "--no-cache", *args, "claims"], cwd=project,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.stdout


def _break_damaged_path(project: Path) -> None:
    """A deploy that opens a case before waiting for the photo: every damaged-parcel run diverges."""
    agent = project / "claims" / "agent.py"
    agent.write_text(agent.read_text(encoding="utf-8").replace(
        '        photo = ctx.wait_signal(',
        '        ctx.step("open case", track, claim["parcel"])\n        photo = ctx.wait_signal('), encoding="utf-8")


@pytest.fixture(scope="module")
def reports(recorded_claims: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The two shards' reports of the broken deploy in each format (``"json"``, …), of the unbroken code
    (``"green"``, JSON) and the unsharded JSON report of the broken deploy (``"whole"``), as text."""
    project = tmp_path_factory.mktemp("merge") / "project"
    shutil.copytree(recorded_claims, project)
    found: dict[str, Any] = {"green": [_check(project, "--format", "json", "--shard", f"{i}/2") for i in (1, 2)]}
    _break_damaged_path(project)
    for output_format in FORMATS:
        found[output_format] = [_check(project, "--format", output_format, "--shard", f"{i}/2") for i in (1, 2)]
    found["whole"] = _check(project, "--format", "json")
    return found


def _merge(tmp_path: Path, *texts: str) -> Any:
    paths = []
    for number, text in enumerate(texts, 1):
        paths.append(tmp_path / f"shard-{number}.report")
        paths[-1].write_text(text, encoding="utf-8")
    return CliRunner().invoke(cli, ["merge-results", *map(str, paths)])


def _refused(done: Any, *words: str) -> str:
    """The merge was refused: exit 2, nothing on stdout, one line on stderr naming ``words``; that line."""
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert done.exit_code == 2, done.output
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ") and "Traceback" not in done.stderr
    for word in words:
        assert word in line, line
    return line


def _moved(path: Path, count: int) -> None:
    """Trailing newlines added to the history ``path`` until its content digest puts it in another shard of
    ``count`` (the bytes change, the history does not)."""
    before = shard_of(path, count)
    while shard_of(path, count) == before:
        path.write_bytes(path.read_bytes() + b"\n")


def test_a_history_that_changed_between_shard_jobs_falls_in_neither_shard_and_the_merge_is_refused(
        claims_project: Path, tmp_path: Path) -> None:
    moving = claims_project / "histories" / HISTORIES[0]
    home = shard_of(moving, 2)
    other = 3 - home
    first = {fmt: _check(claims_project, "--format", fmt, "--shard", f"{other}/2") for fmt in FORMATS}
    _moved(moving, 2)  # a commit between the two jobs: it now belongs to the shard that already ran
    second = {fmt: _check(claims_project, "--format", fmt, "--shard", f"{home}/2") for fmt in FORMATS}
    for fmt in FORMATS:
        line = _refused(_merge(tmp_path, first[fmt], second[fmt]), "the shards took 11 histories but each split 12",
                        "a history was replayed by no shard")
        assert "shard-1.report" in line and "shard-2.report" in line

    # Counts made to add up (as two histories moving in opposite directions would): the shards' split
    # digests, taken over the contents of all twelve histories, still differ.
    one, two = json.loads(first["json"]), json.loads(second["json"])
    one["replay"]["shard"]["histories"] += 1
    one["replay"]["skipped"] = 1  # as if a cached history stood for the one left out
    _refused(_merge(tmp_path, json.dumps(one), json.dumps(two)), "the shards split histories of different contents",
             "a history changed between the shard jobs")
    junit = re.sub(r'shard-histories="(\d+)"', lambda m: f'shard-histories="{int(m.group(1)) + 1}"', first["junit"])
    _refused(_merge(tmp_path, junit, second["junit"]), "the shards split histories of different contents")


def test_a_history_that_changed_between_shard_jobs_replayed_twice_is_refused(claims_project: Path,
                                                                             tmp_path: Path) -> None:
    moving = claims_project / "histories" / HISTORIES[0]
    home = shard_of(moving, 2)
    first = _check(claims_project, "--format", "json", "--shard", f"{home}/2")
    _moved(moving, 2)
    second = _check(claims_project, "--format", "json", "--shard", f"{3 - home}/2")
    _refused(_merge(tmp_path, first, second), "the shards took 13 histories but each split 12",
             "a history was replayed twice")


def test_one_history_in_two_shards_is_refused_even_when_the_marks_add_up(reports: dict[str, Any],
                                                                         tmp_path: Path) -> None:
    one, two = (json.loads(text) for text in reports["json"])
    moved = one["replay"]["results"].pop()  # shard 1 claims one history fewer, shard 2 one more, with a copy
    dropped = one["replay"]["results"].pop()
    one["replay"]["shard"]["histories"] -= 1
    two["replay"]["shard"]["histories"] += 1
    two["replay"]["results"].append(moved)
    one["replay"]["results"].append(moved)
    assert dropped["history"] != moved["history"]
    _refused(_merge(tmp_path, json.dumps(one), json.dumps(two)), "shard-2.report both hold the result of",
             moved["history"], "one history in two shards")


def test_the_merged_counts_come_from_the_results_never_from_a_shards_summary(reports: dict[str, Any],
                                                                             tmp_path: Path) -> None:
    edited = [json.loads(text) for text in reports["json"]]
    for document in edited:
        summary = document["replay"]["summary"]
        summary.update(diverged=-5, passed=99, histories=1, stale=0, error=0, diverged_in_flight=-5)
        summary["diverged_by_run_status"] = {"parked": -5}
        summary["notes"] = ["100 histories: made up"]
        document["lint"]["summary"]["diagnostics"] = -1
    done = _merge(tmp_path, *map(json.dumps, edited))
    assert done.exit_code == 1, done.output  # six damaged-parcel runs diverge, whatever the summaries say
    merged = json.loads(done.stdout)
    whole = json.loads(reports["whole"])
    assert merged["replay"]["summary"] == whole["replay"]["summary"]
    assert (merged["replay"]["summary"]["diverged"], merged["replay"]["summary"]["passed"]) == (6, 6)
    assert merged["lint"]["summary"]["diagnostics"] == len(merged["lint"]["diagnostics"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_merge_results_exits_1_when_the_merged_report_holds_a_divergence(reports: dict[str, Any], tmp_path: Path,
                                                                         fmt: str) -> None:
    done = _merge(tmp_path, *reports[fmt])
    assert done.exit_code == 1, done.output
    assert done.stdout  # the merged report is written all the same, for the CI system to show


def test_merge_results_exits_0_only_when_every_history_passed(reports: dict[str, Any], tmp_path: Path) -> None:
    done = _merge(tmp_path, *reports["green"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["replay"]["summary"]["passed"] == 12


def test_merge_results_exits_2_when_the_merged_report_holds_a_history_that_could_not_be_checked(
        reports: dict[str, Any], tmp_path: Path) -> None:
    for status in ("stale", "error"):
        one, two = (json.loads(text) for text in reports["json"])
        one["replay"]["results"][0]["status"] = status
        done = _merge(tmp_path, json.dumps(one), json.dumps(two))
        assert done.exit_code == 2, done.output
        assert json.loads(done.stdout)["replay"]["summary"][status] == 1
    junit = [text.replace('type="replay/', 'type="replay/stale" was="', 1) if number == 0 else text
             for number, text in enumerate(reports["junit"])]
    assert junit != reports["junit"]
    assert _merge(tmp_path, *junit).exit_code == 2
    sarif = json.loads(reports["sarif"][0])
    [*_, last] = [r for r in sarif["runs"][0]["results"] if r["ruleId"].startswith("replay/")]
    last["ruleId"] = "replay/error"
    assert _merge(tmp_path, json.dumps(sarif), reports["sarif"][1]).exit_code == 2


@pytest.mark.parametrize(("attribute", "value"), [
    ("shard", "1/two"), ("shard", "x"), ("shard", "1/99999999999999999999"), ("shard", "0/2"), ("shard", "3/2"),
    ("shard-of", "twelve"), ("shard-of", "1e3"), ("shard-of", "9" * 5000), ("shard-histories", "-1"),
    ("shard-histories", ""),
])
def test_a_junit_report_with_a_bad_shard_mark_is_one_line_naming_the_file(reports: dict[str, Any], tmp_path: Path,
                                                                          attribute: str, value: str) -> None:
    first = re.sub(rf' {attribute}="[^"]*"', f' {attribute}="{value}"', reports["junit"][0], count=1)
    assert first != reports["junit"][0]
    _refused(_merge(tmp_path, first, reports["junit"][1]), "shard-1.report")


def _mutations(document: Any) -> list[Any]:
    """``document`` with one value at a time replaced by a wrong type, a huge or negative number or nothing."""
    found: list[Any] = []

    def walk(node: Any, path: tuple[Any, ...], depth: int) -> None:
        if depth > 4:
            return
        keys = list(node) if isinstance(node, dict) else range(min(len(node), 2)) if isinstance(node, list) else []
        for key in keys:
            for wrong in ("x", 10**30, -3, None, [], {}, True, 2.5):
                changed = copy.deepcopy(document)
                target = changed
                for step in path:
                    target = target[step]
                if target[key] != wrong or type(target[key]) is not type(wrong):
                    target[key] = wrong
                    found.append(changed)
            walk(node[key], (*path, key), depth + 1)

    walk(document, (), 0)
    return found


@pytest.mark.parametrize("fmt", ("json", "sarif"))
def test_fuzzed_json_reports_are_merged_or_refused_in_one_line_never_a_traceback(reports: dict[str, Any],
                                                                                 tmp_path: Path, fmt: str) -> None:
    first, second = reports[fmt]
    variants = [first[:cut] for cut in range(0, len(first), max(1, len(first) // 40))]
    variants += [json.dumps(changed) for changed in _mutations(json.loads(first))]
    variants += ["[" * 100_000, '{"lint": {}, "replay": ' + "9" * 5000 + "}", "null", "[]", '"text"']
    for text in variants:
        done = _merge(tmp_path, text, second)
        assert done.exception is None or isinstance(done.exception, SystemExit), (text[:300], done.exception)
        assert done.exit_code in (0, 1, 2), (text[:300], done.output)
        if done.stdout == "":
            _refused(done, "shard-1.report")


def test_fuzzed_junit_reports_are_refused_in_one_line_never_a_traceback(reports: dict[str, Any],
                                                                        tmp_path: Path) -> None:
    first, second = reports["junit"]
    variants = [first[:cut] for cut in range(1, len(first), max(1, len(first) // 40))]
    variants += ["<a>" * 50_000, "<testsuites/>", "<testsuites><x/></testsuites>",
                 first.replace('tests="', 'tests="x', 1), first.replace("<testcase", "<testsuite", 1)]
    for text in variants:
        done = _merge(tmp_path, text, second)
        assert done.exception is None or isinstance(done.exception, SystemExit), (text[:300], done.exception)
        assert done.exit_code in (0, 1, 2), (text[:300], done.output)
        if done.stdout == "":
            _refused(done, "shard-1.report")


def test_reports_without_a_split_digest_merge_only_with_each_other(reports: dict[str, Any], tmp_path: Path) -> None:
    """Reports of a replaytest before the split digest carry none: such a set merges on its counts alone, but
    one shard with a digest and one without did not come from the same run."""
    one, two = (json.loads(text) for text in reports["json"])
    assert one["replay"]["shard"]["split"] == two["replay"]["shard"]["split"]
    del one["replay"]["shard"]["split"]
    _refused(_merge(tmp_path, json.dumps(one), json.dumps(two)), "no split digest")
    del two["replay"]["shard"]["split"]
    assert _merge(tmp_path, json.dumps(one), json.dumps(two)).exit_code == 1
