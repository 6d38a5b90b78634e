"""The reports of N shards as one (``replaytest merge-results``), and the mark each shard's report carries.

``replaytest check --shard I/N`` marks its JSON, SARIF and JUnit reports with the shard (``mark_shard``):
``replay.shard`` in JSON, ``runs[0].properties.replaytestShard`` in SARIF, the ``shard``, ``shard-histories``
and ``shard-of`` attributes of JUnit's ``<testsuites>``. ``merge_reports`` takes the N reports of one run and
refuses what would make the merged report lie: a report without a shard mark, shards of different N, a
shard missing or given twice, shards that split different sets of histories (another commit) or linted
different code. The lint part is the same in every shard (each lints the whole tree): it is kept once.
The replay parts are disjoint (each history is in one shard): they are concatenated and their counts added.
"""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from replaytest.replay.shard import ShardSelection

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
    except ValueError:
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
        ET.indent(root)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
    return text


def _check_shards(marks: Sequence[tuple[str, dict[str, Any] | None]]) -> dict[str, int]:
    """The marks of ``(name, mark)`` pairs cover shards 1..N once each of the same histories; the merged mark."""
    for name, mark in marks:
        if mark is None:
            raise MergeError(f"{name}: no shard mark; merge the reports of `replaytest check --shard I/N` runs")
    counts = {mark["count"] for _, mark in marks if mark is not None}
    if len(counts) != 1:
        raise MergeError("the reports are of different shard counts: " + ", ".join(
            f"{name} is shard {mark['index']}/{mark['count']}" for name, mark in marks if mark is not None))
    count = counts.pop()
    seen: dict[int, str] = {}
    for name, mark in marks:
        assert mark is not None
        index = mark["index"]
        if index in seen:
            raise MergeError(f"shard {index}/{count} is given twice: {seen[index]} and {name}")
        seen[index] = name
    missing = [str(index) for index in range(1, count + 1) if index not in seen]
    if missing:
        raise MergeError(f"shard(s) {', '.join(missing)} of {count} missing: every shard's report is needed, "
                         "or the merged report would leave their histories out")
    totals = {mark["of"] for _, mark in marks if mark is not None}
    if len(totals) != 1:
        raise MergeError("the shards split different sets of histories (" + ", ".join(
            f"{name}: {mark['of']}" for name, mark in marks if mark is not None)
            + " in all): they did not run on the same commit and settings")
    histories = sum(mark["histories"] for _, mark in marks if mark is not None)
    return {"shards": count, "histories": histories, "of": totals.pop()}


def _same(name: str, parts: Sequence[tuple[str, Any]]) -> Any:
    first_name, first = parts[0]
    for other_name, other in parts[1:]:
        if other != first:
            raise MergeError(f"{first_name} and {other_name} differ in {name}: the shards did not run on the "
                             "same code and settings")
    return first


def merge_reports(reports: Sequence[tuple[str, str]]) -> str:
    """The one report of ``(file name, text)`` shard reports, all of one format; ``MergeError`` if they
    cannot be merged truthfully."""
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


def _merge_json(reports: Sequence[tuple[str, str]]) -> str:
    documents = [(name, json.loads(text)) for name, text in reports]
    for name, document in documents:
        if document.get("replay") is None:
            raise MergeError(f"{name}: no replay part (no histories configured)")
    merged_mark = _check_shards([(name, document["replay"].get("shard")) for name, document in documents])
    lint = _same("their lint findings", [(name, document["lint"]) for name, document in documents])
    replays = [document["replay"] for _, document in documents]
    excluded = _same("the histories they excluded", [(name, document["replay"].get("excluded"))
                                                       for name, document in documents])
    replay = copy.deepcopy(replays[0])
    replay["results"] = sorted((item for part in replays for item in part["results"]),
                               key=lambda item: str(item.get("history")))
    summary = replay["summary"]
    for key, value in summary.items():
        if isinstance(value, int) and key != "excluded":
            summary[key] = sum(part["summary"][key] for part in replays)
    summary["diverged_by_run_status"] = {
        status: sum(part["summary"]["diverged_by_run_status"].get(status, 0) for part in replays)
        for status in summary["diverged_by_run_status"]
    }
    summary["notes"] = _merged_notes([note for part in replays for note in part["summary"]["notes"]])
    replay["excluded"] = excluded
    replay["skipped"] = sum(part.get("skipped", 0) for part in replays)
    replay["shard"] = None
    replay["merged"] = merged_mark
    return json.dumps({"lint": lint, "replay": replay}, indent=2, ensure_ascii=False) + "\n"


def _merged_notes(notes: Sequence[str]) -> list[str]:
    """Each shard's ``"<n> histories: <note>"`` lines added up per note, in the replay report's order."""
    counts: dict[str, int] = {}
    others: list[str] = []
    for line in notes:
        match = _NOTE.fullmatch(line)
        if match is None:
            if line not in others:
                others.append(line)  # an exclusion note: the same in every shard
            continue
        counts[match.group(2)] = counts.get(match.group(2), 0) + int(match.group(1))
    counted = [f"{number} {'history' if number == 1 else 'histories'}: {note}" for note, number in sorted(counts.items())]
    return counted + others


def _merge_sarif(reports: Sequence[tuple[str, str]]) -> str:
    documents = [(name, json.loads(text)) for name, text in reports]
    runs = [(name, document["runs"][0]) for name, document in documents]
    merged_mark = _check_shards([(name, run.get("properties", {}).get(_SARIF_PROPERTY)) for name, run in runs])
    merged = copy.deepcopy(documents[0][1])
    run = merged["runs"][0]
    rules: list[dict[str, Any]] = []
    rule_ids: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    seen: set[str] = set()
    for _, shard_run in runs:
        own_rules = shard_run["tool"]["driver"].get("rules", [])
        for rule in own_rules:
            if rule["id"] not in rule_ids:
                rule_ids[rule["id"]] = len(rules)
                rules.append(rule)
        for result in shard_run.get("results", []):
            result = dict(result)
            result["ruleIndex"] = rule_ids.get(result.get("ruleId", ""), -1)
            # A lint finding is in every shard's report; a replay result in one: keep each once.
            key = json.dumps(result, sort_keys=True)
            if key not in seen:
                seen.add(key)
                results.append(result)
    run["tool"]["driver"]["rules"] = rules
    run["results"] = results
    properties = run.setdefault("properties", {})
    properties.pop(_SARIF_PROPERTY, None)
    properties[_SARIF_MERGED] = merged_mark
    return json.dumps(merged, indent=2) + "\n"


def _merge_junit(reports: Sequence[tuple[str, str]]) -> str:
    roots = []
    for name, text in reports:
        try:
            roots.append((name, ET.fromstring(text)))
        except ET.ParseError as error:
            raise MergeError(f"{name}: not well-formed XML: {error}") from None
    marks = []
    for name, root in roots:
        label = root.get("shard")
        match = re.fullmatch(r"(\d+)/(\d+)", label or "")
        mark = None if match is None else {"index": int(match.group(1)), "count": int(match.group(2)),
                                           "histories": int(root.get("shard-histories", "0")),
                                           "of": int(root.get("shard-of", "0"))}
        marks.append((name, mark))
    merged_mark = _check_shards(marks)
    merged = ET.Element("testsuites", name=roots[0][1].get("name", "replaytest"))
    suites: dict[str, ET.Element] = {}
    lint_suites = [(name, _canonical(suite)) for name, root in roots for suite in root
                   if suite.get("name") == "replaytest lint"]
    _same("their lint findings", lint_suites)
    for _, root in roots:
        for suite in root:
            suite_name = suite.get("name", "")
            if suite_name in suites:
                if suite_name != "replaytest lint":  # the lint suite is the same in every shard: kept once
                    suites[suite_name].extend(list(suite))
                continue
            suites[suite_name] = copy.deepcopy(suite)
            merged.append(suites[suite_name])
    for suite in suites.values():
        cases = [case for case in suite if case.tag == "testcase"]
        if suite.get("name") != "replaytest lint":
            suite.set("tests", str(len(cases)))
            suite.set("failures", str(sum(1 for case in cases if case.find("failure") is not None)))
            suite.set("errors", str(sum(1 for case in cases if case.find("error") is not None)))
    for attribute in ("tests", "failures", "errors"):
        merged.set(attribute, str(sum(int(suite.get(attribute, "0")) for suite in merged)))
    merged.set("shards", str(merged_mark["shards"]))
    merged.set("shard-histories", str(merged_mark["histories"]))
    merged.set("shard-of", str(merged_mark["of"]))
    ET.indent(merged)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(merged, encoding="unicode") + "\n"


def _canonical(element: ET.Element) -> bytes:
    """An element's XML without the indentation around it (a shard's last suite is indented otherwise)."""
    bare = copy.deepcopy(element)
    for node in bare.iter():
        node.tail = None
        if node.text is not None and not node.text.strip():
            node.text = None
    return ET.tostring(bare)
