"""SARIF 2.1.0 for GitHub code scanning: rule metadata, results with relative URIs under %SRCROOT%,
line-independent partial fingerprints, the trace as a code flow, and the other lines a finding stands for as
related locations its message links to. External results (replay
divergences, stale or broken histories) become results of rules named by their code (``replay/…``).

With ``cwd`` given, %SRCROOT% is the top level of the git repository and URIs are relative to it, so a CI
job with a ``working-directory`` still maps results to the repository's files."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from replaytest import __version__
from replaytest.lint.model import Diagnostic, LintResult, Related
from replaytest.lint.reporters.external import ExternalResult, PathRebaser
from replaytest.lint.rule import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/replaytest/replaytest"


def _rule_descriptor(rule: Rule) -> dict[str, Any]:
    docs = rule.documentation()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _what_it_does(docs) or rule.summary},
        "help": {"text": docs or rule.summary, "markdown": docs or rule.summary},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["replaytest", rule.category]},
    }


def _what_it_does(docs: str) -> str:
    return docs.split("## Why is this bad?")[0].replace("## What it does", "").strip()


def _location(d: Diagnostic, rebase: Callable[[str], str], message: str | None = None) -> dict[str, Any]:
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": {"uri": quote(rebase(d.path), safe="/"), "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": d.line, "startColumn": d.column, "endLine": d.end_line, "endColumn": d.end_column},
        }
    }
    if message is not None:
        location["message"] = {"text": message}
    return location


def _related(place: Related, number: int, rebase: Callable[[str], str]) -> dict[str, Any]:
    return {
        "id": number,
        "physicalLocation": {
            "artifactLocation": {"uri": quote(rebase(place.path), safe="/"), "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": place.line, "startColumn": place.column},
        },
        "message": {"text": place.message},
    }


def _external_descriptor(code: str, title: str) -> dict[str, Any]:
    return {
        "id": code,
        "name": code.replace("/", "-"),
        "shortDescription": {"text": title},
        "fullDescription": {"text": title},
        "help": {"text": title, "markdown": title},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["replaytest", code.split("/")[0]]},
    }


def _external_result(item: ExternalResult, index: int, rebase: Callable[[str], str]) -> dict[str, Any]:
    text = item.message + (f"\n{item.details}" if item.details else "")
    path = rebase(item.path)
    artifact: dict[str, Any] = {"uri": quote(path, safe="/"), "uriBaseId": "%SRCROOT%"}
    if Path(path).is_absolute():  # outside the repository (a history kept elsewhere): an absolute file URI
        artifact = {"uri": Path(path).as_uri()}
    result: dict[str, Any] = {
        "ruleId": item.code,
        "ruleIndex": index,
        "level": "warning" if item.level == "warning" else "error",
        "message": {"text": text},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": artifact,
                "region": {"startLine": max(item.line, 1)},
            }
        }],
        # The history and the kind of problem identify it; the line moves with unrelated edits.
        "partialFingerprints": {"replaytestFingerprint/v1": f"{item.code}:{item.name}"},
    }
    if item.properties:
        result["properties"] = dict(item.properties)
    return result


def render_sarif(
    result: LintResult, rules: Mapping[str, Rule], *, extra: Sequence[ExternalResult] = (), cwd: Path | None = None
) -> str:
    rebase = PathRebaser(cwd)
    ordered = sorted(rules.values(), key=lambda rule: rule.code)
    index = {rule.code: position for position, rule in enumerate(ordered)}
    results = []
    # Identical findings (same file, rule, message and trace) are told apart by their order of
    # occurrence, which a line shift elsewhere does not change.
    occurrences: Counter = Counter()
    for d in result.diagnostics:
        occurrence = occurrences[d.fingerprint]
        occurrences[d.fingerprint] += 1
        item: dict[str, Any] = {
            "ruleId": d.rule,
            "ruleIndex": index.get(d.rule, -1),
            "level": "error",
            "message": {"text": d.message},
            "locations": [_location(d, rebase)],
            "partialFingerprints": {"replaytestFingerprint/v1": f"{d.fingerprint}:{occurrence}"},
        }
        if d.related:
            # Code scanning shows a related location where the message links to it by id ("[text](id)").
            links = ", ".join(f"[{rebase(place.path)}:{place.line}]({number})"
                              for number, place in enumerate(d.related, 1))
            item["message"] = {"text": f"{d.message} Also at: {links}."}
            item["relatedLocations"] = [_related(place, number, rebase) for number, place in enumerate(d.related, 1)]
        if d.trace:
            steps = [{"location": _location(d, rebase, f"called from {d.trace[0]}")}]
            for hop, name in enumerate(d.trace[1:]):
                step: dict[str, Any] = {"message": {"text": name}}
                path = d.trace_paths[hop] if hop < len(d.trace_paths) else ""
                if path:  # a helper: its file (summaries keep no helper positions)
                    artifact = {"uri": quote(rebase(path), safe="/"), "uriBaseId": "%SRCROOT%"}
                    step["physicalLocation"] = {"artifactLocation": artifact}
                steps.append({"location": step})
            item["codeFlows"] = [{"threadFlows": [{"locations": steps}]}]
        results.append(item)
    descriptors = [_rule_descriptor(rule) for rule in ordered]
    external_index: dict[str, int] = {}
    for external in extra:
        if external.level is None:
            continue
        if external.code not in external_index:
            external_index[external.code] = len(descriptors)
            descriptors.append(_external_descriptor(external.code, external.title))
        results.append(_external_result(external, external_index[external.code], rebase))
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "replaytest",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": descriptors,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": rebase.base_description}}},
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"
