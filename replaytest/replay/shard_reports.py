"""The reports of N shards as one (``replaytest merge-results``), and the mark each shard's report carries.

``replaytest check --shard I/N`` marks its JSON, SARIF and JUnit reports with the shard (``mark_shard``):
``replay.shard`` in JSON, ``runs[0].properties.replaytestShard`` in SARIF, the ``shard``, ``shard-histories``,
``shard-of`` and ``shard-split`` attributes of JUnit's ``<testsuites>``. ``merge_reports`` takes the N reports
of one run and refuses what would make the merged report lie: a malformed report, one without a shard mark,
shards of different N, a shard missing or given twice, shards that split different sets of histories
(another commit, or a history that changed between the jobs: their histories do not add up to the total,
their split digests differ, or one history has results in two shards) or linted different code. The lint
part is the same in every shard (each lints the whole tree): it is kept once. The replay parts are disjoint
(each history is in one shard): they are concatenated, and every count is worked out again from the
results, never taken from a shard's summary. ``MergedReport.exit_code`` is ``check``'s code for the merged
content: 2 a stale or error result (or a lint error), 1 a divergence or lint findings, 0 all passed.
"""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from replaytest.replay.divergence import FINISHED_STATUSES, IN_FLIGHT_STATUSES, RUN_STATUSES
from replaytest.replay.report import UNKNOWN_RUN_STATUS
from replaytest.replay.shard import MAX_SHARDS, ShardSelection

FORMATS = ("json", "sarif", "junit")
_SARIF_PROPERTY = "replaytestShard"
_SARIF_MERGED = "replaytestShards"
_NOTE = re.compile(r"(\d+) histor(?:y|ies): (.*)", re.S)


class MergeError(ValueError):
    """The reports cannot be merged into one that tells the truth; the message names the file and why."""


def report_format(text: str) -> str:
    """``json`` (check's JSON document), ``sarif`` or ``junit`` for a report's text; ``MergeError`` else."""
    stripped = text.lstrip()
    if stripped.startswith("<"):
        return "junit"
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):  # truncated, not JSON, numbers of thousands of digits, deep nesting
        raise MergeError("neither JSON nor JUnit XML") from None
    if isinstance(document, dict) and "runs" in document:
        return "sarif"
    if isinstance(document, dict) and "lint" in document and "replay" in document:
        return "json"
    raise MergeError("a JSON document that is neither replaytest check's JSON report nor SARIF")


def mark_shard(text: str, output_format: str, share: ShardSelection) -> str:
    """A SARIF or JUnit report of one shard with its shard mark (JSON carries ``replay.shard`` already)."""
    if output_format == "sarif":
        document = json.loads(text)
        document["runs"][0].setdefault("properties", {})[_SARIF_PROPERTY] = share.data()
        return json.dumps(document, indent=2) + "\n"
    if output_format == "junit":
        root = ET.fromstring(text)
        root.set("shard", share.shard.label)
        root.set("shard-histories", str(len(share.kept)))
        root.set("shard-of", str(share.total))
        root.set("shard-split", share.split_digest)
        ET.indent(root)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
    return text


EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
_REPLAY_STATUSES = ("passed", "diverged", "stale", "error")
_FAILED_REPLAY = ("replay/stale", "replay/error")  # the rule/type of a history that could not be checked
# A history count no run reaches (the digest of a billion files is not read in one CI job): bounds the
# numbers of a mark, so an edited one cannot make the merge loop over them.
MAX_HISTORIES = 10**9


@dataclass(frozen=True)
class MergedReport:
    """The merged report's text and the exit code its content calls for (``check``'s codes)."""

    text: str
    exit_code: int


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _count(name: str, what: str, value: Any, low: int = 0, high: int = MAX_HISTORIES) -> int:
    """``value`` as a whole number from ``low`` to ``high`` (a bool is not one); ``MergeError`` naming the file."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise MergeError(f"{name}: {what} is {_show(value)}, not a whole number from {low} to {high}")
    return value


def _mark(name: str, mark: Any) -> dict[str, Any] | None:
    """A shard mark ``{index, count, histories, of, split}`` checked field by field; None when there is none.
    ``split`` (the digest of every history the run split) is None in the reports of replaytest before it."""
    if mark is None:
        return None
    if not isinstance(mark, dict):
        raise MergeError(f"{name}: the shard mark is {_show(mark)}, not {{index, count, histories, of}}")
    count = _count(name, "the shard count", mark.get("count"), 1, MAX_SHARDS)
    index = _count(name, "the shard index", mark.get("index"), 1, count)
    total = _count(name, "the number of histories split (of)", mark.get("of"))
    histories = _count(name, "the shard's number of histories", mark.get("histories"), 0, total)
    split = mark.get("split")
    if split is not None and (not isinstance(split, str) or re.fullmatch(r"[0-9a-f]{1,64}", split) is None):
        raise MergeError(f"{name}: the split digest is {_show(split)}, not a hex digest")
    return {"index": index, "count": count, "histories": histories, "of": total, "split": split}


def _check_shards(marks: Sequence[tuple[str, Any]]) -> dict[str, int]:
    """The marks of ``(name, mark)`` pairs cover shards 1..N once each of the same histories, and the
    shards' histories add up to the histories each says were split; the merged mark."""
    checked: list[tuple[str, dict[str, Any]]] = []
    for name, raw in marks:
        mark = _mark(name, raw)
        if mark is None:
            raise MergeError(f"{name}: no shard mark; merge the reports of `replaytest check --shard I/N` runs")
        checked.append((name, mark))
    counts = {mark["count"] for _, mark in checked}
    if len(counts) != 1:
        raise MergeError("the reports are of different shard counts: " + ", ".join(
            f"{name} is shard {mark['index']}/{mark['count']}" for name, mark in checked))
    count = counts.pop()
    seen: dict[int, str] = {}
    for name, mark in checked:
        index = mark["index"]
        if index in seen:
            raise MergeError(f"shard {index}/{count} is given twice: {seen[index]} and {name}")
        seen[index] = name
    missing = [str(index) for index in range(1, count + 1) if index not in seen]
    if missing:
        raise MergeError(f"shard(s) {', '.join(missing)} of {count} missing: every shard's report is needed, "
                         "or the merged report would leave their histories out")
    totals = {mark["of"] for _, mark in checked}
    if len(totals) != 1:
        raise MergeError("the shards split different sets of histories (" + ", ".join(
            f"{name}: {mark['of']}" for name, mark in checked)
            + " in all): they did not run on the same commit and settings")
    total = totals.pop()
    histories = sum(mark["histories"] for _, mark in checked)
    if histories != total:
        # Each history's shard is its content digest: a history whose bytes changed between two shard jobs
        # moves to another shard, and is then taken by neither (fewer) or by both (more).
        raise MergeError(
            f"the shards took {histories} histories but each split {total} ("
            + ", ".join(f"{name}: {mark['histories']}" for name, mark in checked)
            + f"): {'a history was replayed by no shard' if histories < total else 'a history was replayed twice'}"
            " (it changed between the shard jobs); rerun every shard on the same commit")
    splits = {mark["split"] for _, mark in checked}
    if len(splits) != 1:
        # Two histories that changed in opposite directions keep the sum right; the split digest does not.
        raise MergeError("the shards split histories of different contents (" + ", ".join(
            f"{name}: {mark['split'] or 'no split digest'}" for name, mark in checked)
            + "): a history changed between the shard jobs, so it may be in no shard or in two; "
            "rerun every shard on the same commit")
    return {"shards": count, "histories": histories, "of": total}


def _same(name: str, parts: Sequence[tuple[str, Any]]) -> Any:
    first_name, first = parts[0]
    for other_name, other in parts[1:]:
        if other != first:
            raise MergeError(f"{first_name} and {other_name} differ in {name}: the shards did not run on the "
                             "same code and settings")
    return first


def _once(what: str, keyed: Sequence[tuple[str, Sequence[str]]]) -> None:
    """No key (a history) in the reports of two shards: ``keyed`` is ``(file name, its keys)``."""
    owner: dict[str, str] = {}
    for name, keys in keyed:
        for key in dict.fromkeys(keys):
            if key in owner:
                raise MergeError(f"{owner[key]} and {name} both hold {what} {_show(key)}: one history in two "
                                 "shards (it changed between the shard jobs); rerun every shard on the same commit")
            owner[key] = name


def merge_reports(reports: Sequence[tuple[str, str]]) -> MergedReport:
    """The one report of ``(file name, text)`` shard reports, all of one format, and its exit code;
    ``MergeError`` (its message names the file) if they cannot be merged truthfully."""
    if not reports:
        raise MergeError("no reports to merge")
    formats = []
    for name, text in reports:
        try:
            formats.append(report_format(text))
        except MergeError as error:
            raise MergeError(f"{name}: {error}") from None
    if len(set(formats)) != 1:
        raise MergeError("the reports are of different formats: " + ", ".join(
            f"{name} is {kind}" for (name, _), kind in zip(reports, formats)))
    merge = {"json": _merge_json, "sarif": _merge_sarif, "junit": _merge_junit}[formats[0]]
    return merge(reports)


def _need(name: str, container: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``container[key]``, which must be a ``kind``; ``MergeError`` naming the file and the part otherwise."""
    value = container.get(key) if isinstance(container, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise MergeError(f"{name}: {where}{key} is {_show(value)}, not what `replaytest check` writes there")
    return value


def _json_result(name: str, position: int, item: Any) -> dict[str, Any]:
    where = f"replay.results[{position}]."
    if not isinstance(item, dict):
        raise MergeError(f"{name}: replay.results[{position}] is {_show(item)}, not a history's result")
    _need(name, item, "history", str, where)
    status = item.get("status")
    if status not in _REPLAY_STATUSES:
        raise MergeError(f"{name}: {where}status is {_show(status)}, not one of {', '.join(_REPLAY_STATUSES)}")
    _need(name, item, "warnings", list, where)
    notes = _need(name, item, "notes", list, where)
    if not all(isinstance(note, str) for note in notes):
        raise MergeError(f"{name}: {where}notes holds something other than text")
    if item.get("run_status") is not None:
        _need(name, item, "run_status", str, where)
    return item


def _json_summary(results: Sequence[dict[str, Any]], other_notes: list[str], excluded: int) -> dict[str, Any]:
    """The replay summary of ``check``'s JSON (``report.report_data``), worked out from the results alone."""
    counts: dict[str, Any] = {"histories": len(results), "passed": 0, "diverged": 0, "stale": 0, "error": 0,
                              "warnings": 0}
    by_status = dict.fromkeys((*RUN_STATUSES, UNKNOWN_RUN_STATUS), 0)
    notes: dict[str, int] = {}
    for item in results:
        counts[item["status"]] += 1
        counts["warnings"] += len(item["warnings"])
        if item["status"] == "diverged":
            status = item.get("run_status")
            by_status[status if status in RUN_STATUSES else UNKNOWN_RUN_STATUS] += 1
        for note in item["notes"]:
            notes[note] = notes.get(note, 0) + 1
    counts["diverged_in_flight"] = sum(by_status[status] for status in IN_FLIGHT_STATUSES)
    counts["diverged_finished"] = sum(by_status[status] for status in FINISHED_STATUSES)
    counts["diverged_run_status_unknown"] = by_status[UNKNOWN_RUN_STATUS]
    counts["notes"] = [f"{number} {'history' if number == 1 else 'histories'}: {note}"
                       for note, number in sorted(notes.items())] + other_notes
    counts["diverged_by_run_status"] = by_status
    counts["excluded"] = excluded
    return counts


def _replay_code(summary: dict[str, Any]) -> int:
    """``check``'s replay exit code for a summary: 2 stale or error, 1 diverged, 0 all passed."""
    if summary["stale"] or summary["error"]:
        return EXIT_ERROR
    return EXIT_FINDINGS if summary["diverged"] else EXIT_CLEAN


def _merge_json(reports: Sequence[tuple[str, str]]) -> MergedReport:
    documents = [(name, json.loads(text)) for name, text in reports]
    replays: list[tuple[str, dict[str, Any]]] = []
    lints: list[tuple[str, dict[str, Any]]] = []
    per_shard: list[tuple[str, list[str]]] = []
    for name, document in documents:
        if document.get("replay") is None:
            raise MergeError(f"{name}: no replay part (no histories configured)")
        replay = _need(name, document, "replay", dict, "")
        lint = _need(name, document, "lint", dict, "")
        _need(name, lint, "diagnostics", list, "lint.")
        _count(name, "lint.summary.errors", _need(name, lint, "summary", dict, "lint.").get("errors"))
        raw_results = _need(name, replay, "results", list, "replay.")
        results = [_json_result(name, position, item) for position, item in enumerate(raw_results)]
        _need(name, replay, "summary", dict, "replay.")
        notes = _need(name, replay["summary"], "notes", list, "replay.summary.")
        if not all(isinstance(note, str) for note in notes):
            raise MergeError(f"{name}: replay.summary.notes holds something other than text")
        replays.append((name, replay))
        lints.append((name, lint))
        per_shard.append((name, [item["history"] for item in results]))
    merged_mark = _check_shards([(name, replay.get("shard")) for name, replay in replays])
    for (name, replay), (_, histories) in zip(replays, per_shard):
        mark = replay["shard"]
        skipped = _count(name, "replay.skipped", replay.get("skipped", 0))
        if len(histories) + skipped > mark["histories"]:
            raise MergeError(f"{name}: {len(histories)} results and {skipped} skipped, but the shard took "
                             f"{mark['histories']} histories")
        if len(set(histories)) != len(histories):
            raise MergeError(f"{name}: a history has two results in one shard's report")
    _once("the result of", per_shard)
    lint = copy.deepcopy(_same("their lint findings", lints))
    lint["summary"]["diagnostics"] = len(lint["diagnostics"])
    excluded = _same("the histories they excluded", [(name, replay.get("excluded")) for name, replay in replays])
    if excluded is not None and not isinstance(excluded, list):
        raise MergeError(f"{replays[0][0]}: replay.excluded is {_show(excluded)}, not a list")
    # Exclusion notes are the same in every shard; the counted notes ("N histories: …") come from the results.
    other_notes = list(dict.fromkeys(note for _, replay in replays for note in replay["summary"]["notes"]
                                     if _NOTE.fullmatch(note) is None))
    results = sorted((item for _, replay in replays for item in replay["results"]), key=lambda item: item["history"])
    replay = copy.deepcopy(replays[0][1])
    replay["results"] = results
    replay["summary"] = _json_summary(results, other_notes, len(excluded or ()))
    replay["excluded"] = excluded
    replay["skipped"] = sum(part.get("skipped", 0) for _, part in replays)
    replay["shard"] = None
    replay["merged"] = merged_mark
    lint_code = EXIT_ERROR if lint["summary"]["errors"] else EXIT_FINDINGS if lint["diagnostics"] else EXIT_CLEAN
    text = json.dumps({"lint": lint, "replay": replay}, indent=2, ensure_ascii=False) + "\n"
    return MergedReport(text, max(lint_code, _replay_code(replay["summary"])))


def _sarif_run(name: str, document: Any) -> dict[str, Any]:
    runs = _need(name, document, "runs", list, "")
    if len(runs) != 1 or not isinstance(runs[0], dict):
        raise MergeError(f"{name}: runs holds {len(runs)} entries, not the one run `replaytest check` writes")
    run = runs[0]
    driver = _need(name, _need(name, run, "tool", dict, "runs[0]."), "driver", dict, "runs[0].tool.")
    for position, rule in enumerate(_need(name, driver, "rules", list, "runs[0].tool.driver.")):
        _need(name, rule, "id", str, f"runs[0].tool.driver.rules[{position}].")
    for position, result in enumerate(_need(name, run, "results", list, "runs[0].")):
        _need(name, result, "ruleId", str, f"runs[0].results[{position}].")
        _need(name, result, "level", str, f"runs[0].results[{position}].")
    if "properties" in run:
        _need(name, run, "properties", dict, "runs[0].")
    return run


def _merge_sarif(reports: Sequence[tuple[str, str]]) -> MergedReport:
    documents = [(name, json.loads(text)) for name, text in reports]
    runs = [(name, _sarif_run(name, document)) for name, document in documents]
    merged_mark = _check_shards([(name, run.get("properties", {}).get(_SARIF_PROPERTY)) for name, run in runs])

    def key(result: dict[str, Any]) -> str:
        return json.dumps({k: v for k, v in result.items() if k != "ruleIndex"}, sort_keys=True)

    # A lint finding is in every shard's report (each lints the whole tree), the same in each: kept once.
    # A replay result is in the report of the one shard that replayed its history.
    _same("their lint findings", [(name, [key(r) for r in run["results"] if not r["ruleId"].startswith("replay/")])
                                  for name, run in runs])
    _once("the replay result", [(name, [key(r) for r in run["results"] if r["ruleId"].startswith("replay/")])
                                for name, run in runs])
    merged = copy.deepcopy(documents[0][1])
    run = merged["runs"][0]
    rules: list[dict[str, Any]] = []
    rule_ids: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    for position, (_, shard_run) in enumerate(runs):
        for rule in shard_run["tool"]["driver"]["rules"]:
            if rule["id"] not in rule_ids:
                rule_ids[rule["id"]] = len(rules)
                rules.append(rule)
        for result in shard_run["results"]:
            if position and not result["ruleId"].startswith("replay/"):
                continue  # the lint findings of the first shard stand for all
            result = dict(result)
            result["ruleIndex"] = rule_ids.get(result["ruleId"], -1)
            results.append(result)
    run["tool"]["driver"]["rules"] = rules
    run["results"] = results
    properties = run.setdefault("properties", {})
    properties.pop(_SARIF_PROPERTY, None)
    properties[_SARIF_MERGED] = merged_mark
    if any(result["ruleId"] in _FAILED_REPLAY for result in results):
        code = EXIT_ERROR
    else:
        code = EXIT_FINDINGS if any(result["level"] == "error" for result in results) else EXIT_CLEAN
    return MergedReport(json.dumps(merged, indent=2) + "\n", code)


def _junit_mark(name: str, root: ET.Element) -> dict[str, Any] | None:
    """The shard mark of a JUnit report's ``<testsuites>``; None without one, ``MergeError`` if malformed."""
    label = root.get("shard")
    if label is None:
        return None
    match = re.fullmatch(r"(\d{1,9})/(\d{1,9})", label)
    if match is None:
        raise MergeError(f"{name}: the shard mark shard={_show(label)} is not I/N")
    numbers = {}
    for attribute in ("shard-histories", "shard-of"):
        value = root.get(attribute)
        if value is None or re.fullmatch(r"\d{1,10}", value) is None:
            raise MergeError(f"{name}: {attribute}={_show(value)} is not a number of histories")
        numbers[attribute] = int(value)
    return {"index": int(match.group(1)), "count": int(match.group(2)),
            "histories": numbers["shard-histories"], "of": numbers["shard-of"], "split": root.get("shard-split")}


def _merge_junit(reports: Sequence[tuple[str, str]]) -> MergedReport:
    roots = []
    for name, text in reports:
        try:
            root = ET.fromstring(text)
        except ET.ParseError as error:
            raise MergeError(f"{name}: not well-formed XML: {error}") from None
        if root.tag != "testsuites" or any(suite.tag != "testsuite" for suite in root):
            raise MergeError(f"{name}: not the <testsuites> of <testsuite> elements `replaytest check` writes")
        roots.append((name, root))
    merged_mark = _check_shards([(name, _junit_mark(name, root)) for name, root in roots])
    merged = ET.Element("testsuites", name=roots[0][1].get("name", "replaytest"))
    suites: dict[str, ET.Element] = {}
    lint_suites = [(name, _canonical(suite)) for name, root in roots for suite in root
                   if suite.get("name") == "replaytest lint"]
    if lint_suites:
        _same("their lint findings", lint_suites)
    _once("the test case", [(name, [f"{suite.get('name')}: {case.get('name')}" for suite in root
                                    if suite.get("name") != "replaytest lint" for case in suite
                                    if case.tag == "testcase"]) for name, root in roots])
    for _, root in roots:
        for suite in root:
            suite_name = suite.get("name", "")
            if suite_name in suites:
                if suite_name != "replaytest lint":  # the lint suite is the same in every shard: kept once
                    suites[suite_name].extend(list(suite))
                continue
            suites[suite_name] = copy.deepcopy(suite)
            merged.append(suites[suite_name])
    code = EXIT_CLEAN
    for suite in suites.values():
        cases = [case for case in suite if case.tag == "testcase"]
        failures = [failure for case in cases for failure in case.findall("failure")]
        errors = [error for case in cases for error in case.findall("error")]
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for case in cases if case.find("failure") is not None)))
        suite.set("errors", str(sum(1 for case in cases if case.find("error") is not None)))
        if errors or any(failure.get("type") in _FAILED_REPLAY for failure in failures):
            code = EXIT_ERROR
        elif failures:
            code = max(code, EXIT_FINDINGS)
    for attribute in ("tests", "failures", "errors"):
        merged.set(attribute, str(sum(int(suite.get(attribute, "0")) for suite in merged)))
    merged.set("shards", str(merged_mark["shards"]))
    merged.set("shard-histories", str(merged_mark["histories"]))
    merged.set("shard-of", str(merged_mark["of"]))
    ET.indent(merged)
    return MergedReport('<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(merged, encoding="unicode") + "\n",
                        code)


def _canonical(element: ET.Element) -> bytes:
    """An element's XML without the indentation around it (a shard's last suite is indented otherwise)."""
    bare = copy.deepcopy(element)
    for node in bare.iter():
        node.tail = None
        if node.text is not None and not node.text.strip():
            node.text = None
    return ET.tostring(bare)
