"""``replaytest check --shard I/N``: four shards together replay every history exactly once, each history
in the shard of its content digest (so recording more histories moves none of the old ones); the four
shards' cache folders restored into one make the next run skip every history; a bad shard spec is exit 2
naming the fix; ``merge-results`` makes one JSON, SARIF or JUnit report of the four and refuses an
incomplete set."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from shard_kit import HISTORIES, record

DAMAGED = ("claim-01.json", "claim-03.json", "claim-05.json", "claim-07.json", "claim-09.json", "claim-11.json")


def _run(project: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "replaytest", *args], cwd=project, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == code, done.stdout + done.stderr
    return done


def _check(project: Path, *args: str, code: int = 0) -> dict:
    return json.loads(_run(project, "check", "--format", "json", *args, "claims", code=code).stdout)["replay"]


def _names(replay: dict) -> list[str]:
    return sorted(Path(result["history"]).name for result in replay["results"])


def _digest_shard(path: Path, count: int) -> int:
    """The documented rule, worked out here independently: SHA-256 of the bytes, first 8 bytes, mod N, plus 1."""
    return int(hashlib.sha256(path.read_bytes()).hexdigest()[:16], 16) % count + 1


@pytest.mark.slow  # nine check runs in subprocesses
def test_four_shards_replay_each_history_once_and_their_caches_together_skip_them_all(claims_project: Path) -> None:
    cache = claims_project / ".replaytest_cache"
    machines = claims_project.parent / "machines"
    taken: list[str] = []
    splits = set()
    for index in range(1, 5):
        replay = _check(claims_project, "--shard", f"{index}/4")
        splits.add(replay["shard"].pop("split"))
        assert replay["shard"] == {"index": index, "count": 4, "histories": len(replay["results"]), "of": 12}
        assert replay["skipped"] == 0
        taken += _names(replay)
        shutil.move(str(cache), machines / str(index))  # each CI machine keeps its own folder
    assert sorted(taken) == list(HISTORIES)  # every history once: none twice, none left out
    assert len(splits) == 1  # the four shards split the same twelve histories: one split digest

    # The next run on each machine, with only its own folder restored, skips its whole share.
    shutil.copytree(machines / "2", cache)
    second = _check(claims_project, "--shard", "2/4")
    assert second["results"] == [] and second["skipped"] == second["shard"]["histories"]
    shutil.rmtree(cache)

    # All four folders restored into one: a run over every history replays none of them.
    for index in range(1, 5):
        shutil.copytree(machines / str(index), cache, dirs_exist_ok=True)
    assert sorted(path.name for path in (cache / "replay").glob("passed*.json")) == [
        f"passed.shard-{index}-of-4.json" for index in range(1, 5)]
    merged = _check(claims_project)
    assert merged["results"] == [] and merged["skipped"] == 12 and merged["shard"] is None
    # That run wrote the union into the unsharded file: the shards' files are no longer needed to skip.
    for shard_file in (cache / "replay").glob("passed.shard-*.json"):
        shard_file.unlink()
    again = _check(claims_project)
    assert again["results"] == [] and again["skipped"] == 12


@pytest.mark.slow
def test_a_history_goes_to_the_shard_of_its_content_digest_and_new_histories_move_none(claims_project: Path) -> None:
    histories = claims_project / "histories"
    before = {name: _digest_shard(histories / name, 3) for name in HISTORIES}
    for index in range(1, 4):
        replay = _check(claims_project, "--no-cache", "--shard", f"{index}/3")
        assert _names(replay) == sorted(name for name, shard in before.items() if shard == index)

    record(claims_project, 12, 18)  # six more runs recorded: the old twelve stay where they were
    seen: dict[str, int] = {}
    for index in range(1, 4):
        replay = _check(claims_project, "--no-cache", "--shard", f"{index}/3")
        assert replay["shard"]["of"] == 18
        seen.update((name, index) for name in _names(replay))
    assert {name: seen[name] for name in HISTORIES} == before
    assert len(seen) == 18


@pytest.mark.parametrize(("spec", "problem"), [
    ("0/4", "the shard I must be from 1 to 4 (shards are numbered from 1)"),
    ("5/4", "the shard I must be from 1 to 4"),
    ("1/0", "the number of shards N must be from 1 to 1000"),
    ("2", "expected I/N, the shard I (1-based) of N, e.g. --shard 2/4"),
    ("one/four", "expected I/N"),
])
def test_a_bad_shard_spec_is_a_usage_error_saying_the_form(claims_project: Path, spec: str, problem: str) -> None:
    done = _run(claims_project, "check", "--shard", spec, "claims", code=2)
    assert f"error: --shard {spec!r}: {problem}" in done.stderr
    assert done.stdout == ""  # refused before anything ran


def test_a_shard_refuses_the_diff_base_gate(claims_project: Path) -> None:
    done = _run(claims_project, "check", "--shard", "1/4", "--diff-base", "HEAD", "claims", code=2)
    assert "the uncovered-lines verdict needs the coverage of every history" in done.stderr
    assert "run the --diff-base gate without --shard" in done.stderr


def _break_damaged_path(project: Path) -> None:
    """A deploy that opens a case before waiting for the photo: every damaged-parcel run diverges."""
    agent = project / "claims" / "agent.py"
    text = agent.read_text(encoding="utf-8")
    text = text.replace('        photo = ctx.wait_signal(',
                        '        ctx.step("open case", track, claim["parcel"])\n        photo = ctx.wait_signal(')
    agent.write_text(text, encoding="utf-8")


@pytest.mark.slow  # twelve check runs in subprocesses
def test_merge_results_makes_one_report_of_the_four_shards_in_each_format(claims_project: Path) -> None:
    _break_damaged_path(claims_project)
    reports: dict[str, list[Path]] = {}
    for output_format in ("json", "sarif", "junit"):
        for index in range(1, 5):
            done = _run(claims_project, "check", "--no-cache", "--format", output_format, "--shard", f"{index}/4",
                        "claims", code=1 if any(_digest_shard(claims_project / "histories" / name, 4) == index
                                                for name in DAMAGED) else 0)
            report = claims_project.parent / f"shard-{index}.{output_format}"
            report.write_text(done.stdout, encoding="utf-8")
            reports.setdefault(output_format, []).append(report)

    # The merged report holds six divergences: exit 1, as `check` over all twelve histories (a CI job gated on
    # the merge fails).
    merged = json.loads(_run(claims_project, "merge-results", *map(str, reports["json"]), code=1).stdout)
    replay = merged["replay"]
    assert replay["merged"] == {"shards": 4, "histories": 12, "of": 12} and replay["shard"] is None
    assert _names(replay) == list(HISTORIES)
    assert sorted(Path(r["history"]).name for r in replay["results"] if r["status"] == "diverged") == list(DAMAGED)
    assert (replay["summary"]["histories"], replay["summary"]["passed"], replay["summary"]["diverged"]) == (12, 6, 6)
    assert replay["summary"]["diverged_by_run_status"]["parked"] == 6  # they wait for the photo
    assert merged["lint"]["summary"]["files"] == 2  # linted by every shard, reported once
    whole = json.loads(_run(claims_project, "check", "--no-cache", "--format", "json", "claims", code=1).stdout)
    assert replay["summary"] == whole["replay"]["summary"]  # worked out as check works it out

    sarif = json.loads(_run(claims_project, "merge-results", *map(str, reports["sarif"]), code=1).stdout)
    [run] = sarif["runs"]
    assert run["properties"] == {"replaytestShards": {"shards": 4, "histories": 12, "of": 12}}
    diverged = sorted(result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                      for result in run["results"])
    assert len(diverged) == 6  # one result per diverged history, each once
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]

    junit = _run(claims_project, "merge-results", *map(str, reports["junit"]), code=1).stdout
    assert 'shards="4" shard-histories="12" shard-of="12"' in junit
    assert junit.count('<testsuite name="replaytest lint"') == 1
    assert '<testsuite name="replaytest replay" tests="12" failures="6" errors="0">' in junit
    assert junit.count('classname="replaytest.replay"') == 12


def test_merge_results_refuses_a_missing_a_repeated_or_an_unmarked_shard(claims_project: Path) -> None:
    reports = []
    for index in range(1, 4):
        done = _run(claims_project, "check", "--no-cache", "--format", "json", "--shard", f"{index}/3", "claims")
        reports.append(claims_project.parent / f"shard-{index}.json")
        reports[-1].write_text(done.stdout, encoding="utf-8")
    missing = _run(claims_project, "merge-results", str(reports[0]), str(reports[2]), code=2)
    assert "shard(s) 2 of 3 missing" in missing.stderr
    twice = _run(claims_project, "merge-results", *map(str, reports), str(reports[1]), code=2)
    assert f"shard 2/3 is given twice: {reports[1]} and {reports[1]}" in twice.stderr
    whole = claims_project.parent / "whole.json"
    whole.write_text(_run(claims_project, "check", "--no-cache", "--format", "json", "claims").stdout, encoding="utf-8")
    unmarked = _run(claims_project, "merge-results", *map(str, reports), str(whole), code=2)
    assert f"{whole}: no shard mark" in unmarked.stderr
    assert unmarked.stdout == ""
