"""Corpus selection (``replaytest corpus``): which histories of a folder to keep so that a small set
covers everything the full set covers, per workflow type.

A history *covers* its command shape (the sequence of command kinds and names, patch ids included, of
the recorded run) and the orchestration lines and branches its replay executed against the current code
(``coverage.coverage_by_history``). ``select_corpus`` keeps, per workflow type:

- every history that must never be dropped: an in-flight run (running, parked: a deploy breaks those),
  one whose run status is unknown (it may be in flight), and one that did not replay cleanly (diverged,
  error, stale: its coverage is cut short and it is what the current code gets wrong);
- then, greedily, the history that adds the most shapes, lines and branches not covered yet, until the
  kept set covers everything the full set covers. Ties go to the smallest file digest, then the path,
  so the same folder always gives the same selection.

Each kept history carries the reasons it was kept (``KEEP_REASONS``): what it added when it was chosen.
``CorpusOutcome`` is what the command reports (text and JSON) and its exit code. This module neither
replays nor writes files; the command (``cli.corpus``) replays, measures, writes the kept set
(``corpus_files``) and measures it again (``CorpusCoverage`` before and after must be equal).
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replaytest.history.model import History
from replaytest.replay.coverage import HistoryCoverage
from replaytest.replay.divergence import IN_FLIGHT_STATUSES
from replaytest.replay.report import display_path

if TYPE_CHECKING:
    from replaytest.replay.corpus_files import CopyReport

# Why a history is kept, the one vocabulary of the text report, the JSON ``reasons[].kind`` and the docs.
KEEP_REASONS: tuple[str, ...] = (
    "in-flight",  # a running or parked run: what a deploy can break
    "unknown-run-status",  # the history does not say whether the run is finished: it may be in flight
    "not-replayed-cleanly",  # diverged, error or stale against the current code: never dropped
    "shape",  # the first kept history of its command shape
    "lines",  # orchestration lines no history kept before it executes
    "branches",  # branches no history kept before it takes
)

Shape = tuple[tuple[str, str, str], ...]
# What selection counts: ("shape", Shape), ("line", (path, line)) or ("branch", (path, from, to)).
Element = tuple[str, Any]


def command_shape(history: History) -> Shape:
    """The run's command shape: (kind, name, patch id) per recorded event, in order. Arguments, results
    and prompt versions are not part of it: two runs making the same decisions share a shape."""
    return tuple((event.kind, event.name, event.patch_id or "") for event in history.events)


def shape_id(shape: Shape) -> str:
    """A short stable name for a shape (12 hex digits of the SHA-256 of its JSON)."""
    return hashlib.sha256(json.dumps(shape).encode("utf-8")).hexdigest()[:12]


def describe_shape(shape: Shape) -> str:
    """``step 'fetch orders' → patch 'v2' → timer '1'``: each command, the patch id for a marker."""
    parts = []
    for kind, name, patch_id in shape:
        text = f"{kind} {name!r}" if name else kind
        if patch_id:
            text += f" {patch_id!r}"
        parts.append(text)
    return " → ".join(parts) or "(no commands)"


@dataclass(frozen=True)
class CorpusEntry:
    """One history of the full set, as selection sees it. ``shape`` is None when the history could not be
    read as one (it is then kept for ``not-replayed-cleanly`` or the shape reader's error); ``must_keep``
    is the reason a history is kept whatever it covers (a ``KEEP_REASONS`` member), or None."""

    path: Path
    label: str  # the path as reports show it
    digest: str
    workflow_type: str
    shape: Shape | None
    coverage: HistoryCoverage
    replay_status: str = "passed"  # the ReplayResult status against the current code
    must_keep: str | None = None
    must_keep_detail: str = ""


@dataclass(frozen=True)
class KeepReason:
    kind: str  # a KEEP_REASONS member
    detail: str  # e.g. the run status, the shape id, the lines ``agent.py:31, 33``

    def __post_init__(self) -> None:
        if self.kind not in KEEP_REASONS:
            raise ValueError(f"unknown keep reason {self.kind!r}; expected one of {', '.join(KEEP_REASONS)}")


@dataclass
class KeptHistory:
    entry: CorpusEntry
    reasons: list[KeepReason] = field(default_factory=list)


@dataclass
class CorpusCoverage:
    """What a set of histories of one workflow type covers: shapes, orchestration lines and branches."""

    shapes: frozenset[Shape] = frozenset()
    lines: frozenset[tuple[str, int]] = frozenset()
    branches: frozenset[tuple[str, int, int]] = frozenset()

    @classmethod
    def of(cls, entries: Iterable[CorpusEntry]) -> CorpusCoverage:
        shapes: set[Shape] = set()
        lines: set[tuple[str, int]] = set()
        branches: set[tuple[str, int, int]] = set()
        for entry in entries:
            if entry.shape is not None:
                shapes.add(entry.shape)
            lines |= entry.coverage.lines
            branches |= entry.coverage.branches
        return cls(frozenset(shapes), frozenset(lines), frozenset(branches))

    def missing_from(self, other: CorpusCoverage) -> CorpusCoverage:
        """What this covers that ``other`` does not."""
        return CorpusCoverage(self.shapes - other.shapes, self.lines - other.lines, self.branches - other.branches)

    @property
    def empty(self) -> bool:
        return not (self.shapes or self.lines or self.branches)


@dataclass
class WorkflowSelection:
    """The selection for one workflow type: every history of it, the kept ones in the order chosen."""

    workflow_type: str
    entries: list[CorpusEntry]
    kept: list[KeptHistory]

    @property
    def dropped(self) -> list[CorpusEntry]:
        kept = {item.entry.path for item in self.kept}
        return [entry for entry in self.entries if entry.path not in kept]

    @property
    def before(self) -> CorpusCoverage:
        return CorpusCoverage.of(self.entries)

    @property
    def shape_runs(self) -> dict[Shape, int]:
        """How many histories of the full set have each shape."""
        counts: dict[Shape, int] = defaultdict(int)
        for entry in self.entries:
            if entry.shape is not None:
                counts[entry.shape] += 1
        return dict(counts)


def _tie_key(entry: CorpusEntry) -> tuple[str, str]:
    return (entry.digest, entry.label)


def _elements(entry: CorpusEntry) -> set[Element]:
    items: set[Element] = {("line", line) for line in entry.coverage.lines}
    items |= {("branch", branch) for branch in entry.coverage.branches}
    if entry.shape is not None:
        items.add(("shape", entry.shape))
    return items


def _display_lines(lines: Iterable[tuple[str, int]], display: Callable[[str], str]) -> str:
    by_file: dict[str, list[int]] = defaultdict(list)
    for path, line in lines:
        by_file[path].append(line)
    return "; ".join(f"{display(path)}:{', '.join(map(str, sorted(numbers)))}" for path, numbers in sorted(by_file.items()))


def _arc_text(start: int, end: int) -> str:
    # coverage writes an arc leaving the function as a negative line number; the table says "exit".
    return f"{start}->{end if end > 0 else 'exit'}"


def _display_branches(branches: Iterable[tuple[str, int, int]], display: Callable[[str], str]) -> str:
    by_file: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for path, start, end in branches:
        by_file[path].append((start, end))
    return "; ".join(
        f"{display(path)}:{', '.join(_arc_text(a, b) for a, b in sorted(arcs))}"
        for path, arcs in sorted(by_file.items())
    )


def _added_reasons(entry: CorpusEntry, new: set[Element], display: Callable[[str], str]) -> list[KeepReason]:
    reasons = []
    if ("shape", entry.shape) in new and entry.shape is not None:
        reasons.append(KeepReason("shape", shape_id(entry.shape)))
    lines = [item[1] for item in new if item[0] == "line"]
    if lines:
        reasons.append(KeepReason("lines", _display_lines(lines, display)))
    branches = [item[1] for item in new if item[0] == "branch"]
    if branches:
        reasons.append(KeepReason("branches", _display_branches(branches, display)))
    return reasons


def select_workflow(workflow_type: str, entries: Sequence[CorpusEntry], display: Callable[[str], str] = str) -> WorkflowSelection:
    """Keep the must-keep histories of one workflow type, then greedily the one adding the most uncovered
    shapes, lines and branches (ties: smallest digest, then path) until nothing is left uncovered."""
    ordered = sorted(entries, key=_tie_key)
    kept: list[KeptHistory] = []
    covered: set[Element] = set()
    candidates = []
    for entry in ordered:
        if entry.must_keep is not None:
            item = KeptHistory(entry, [KeepReason(entry.must_keep, entry.must_keep_detail)])
            new = _elements(entry) - covered
            item.reasons.extend(_added_reasons(entry, new, display))
            covered |= new
            kept.append(item)
        else:
            candidates.append((entry, _elements(entry)))
    # Lazy greedy: a candidate's gain only shrinks as more is covered, so the heap holds upper bounds;
    # the top one whose recomputed gain still beats the next bound is the eager choice. Heap order is
    # (-gain, position in digest order): equal gains go to the smaller digest, as in the eager loop.
    heap = [(-len(items), index) for index, (_, items) in enumerate(candidates) if items - covered]
    heapq.heapify(heap)
    while heap:
        _, index = heapq.heappop(heap)
        entry, items = candidates[index]
        new = items - covered
        if not new:
            continue
        if heap and (-len(new), index) > heap[0]:
            heapq.heappush(heap, (-len(new), index))  # another candidate may add more now
            continue
        kept.append(KeptHistory(entry, _added_reasons(entry, new, display)))
        covered |= new
    return WorkflowSelection(workflow_type, list(ordered), kept)


def select_corpus(entries: Sequence[CorpusEntry], display: Callable[[str], str] = str) -> list[WorkflowSelection]:
    """The selection per workflow type, by workflow type name."""
    by_type: dict[str, list[CorpusEntry]] = defaultdict(list)
    for entry in entries:
        by_type[entry.workflow_type].append(entry)
    return [select_workflow(name, by_type[name], display) for name in sorted(by_type)]


def must_keep(status: str, run_status: str | None) -> tuple[str | None, str]:
    """(reason, detail) a replayed history is kept whatever it covers, or (None, "")."""
    if status != "passed":
        return "not-replayed-cleanly", status
    if run_status is None:
        return "unknown-run-status", "the history does not record whether the run finished"
    if run_status in IN_FLIGHT_STATUSES:
        return "in-flight", run_status
    return None, ""


@dataclass
class CorpusOutcome:
    """What ``replaytest corpus`` did: the selections, the kept set measured again (``after``, per
    workflow type), what was written or deleted (and what ``--prune`` could not delete), and notes for
    checks that could not apply."""

    selections: list[WorkflowSelection]
    notes: list[str] = field(default_factory=list)
    after: dict[str, CorpusCoverage] = field(default_factory=dict)
    out_dir: Path | None = None
    written: CopyReport | None = None
    deleted: list[Path] = field(default_factory=list)
    not_deleted: list[tuple[Path, str]] = field(default_factory=list)  # dropped, but --prune could not delete it: why

    def measure_after(self, entries: Iterable[CorpusEntry]) -> None:
        by_type: dict[str, list[CorpusEntry]] = defaultdict(list)
        for entry in entries:
            by_type[entry.workflow_type].append(entry)
        self.after = {name: CorpusCoverage.of(items) for name, items in by_type.items()}

    def missing_after(self, selection: WorkflowSelection) -> CorpusCoverage:
        return selection.before.missing_from(self.after.get(selection.workflow_type, CorpusCoverage()))

    @property
    def covers_everything(self) -> bool:
        return all(self.missing_after(selection).empty for selection in self.selections)

    @property
    def histories(self) -> int:
        return sum(len(selection.entries) for selection in self.selections)

    @property
    def kept(self) -> int:
        return sum(len(selection.kept) for selection in self.selections)

    @property
    def smaller_percent(self) -> float:
        return 100.0 * (self.histories - self.kept) / self.histories if self.histories else 0.0

    def exit_code(self) -> int:
        """0 the kept set covers everything, 1 it does not or a history diverges, 2 a history could not be
        replayed (error, stale) or a dropped history could not be deleted (``--prune`` did not finish)."""
        statuses = {entry.replay_status for selection in self.selections for entry in selection.entries}
        if statuses & {"error", "stale"} or self.not_deleted:
            return 2
        return 1 if not self.covers_everything or "diverged" in statuses else 0

    def text_lines(self, details: bool = False) -> list[str]:
        lines = [
            f"corpus of {self.histories} histories, {len(self.selections)} workflow type(s): keep {self.kept}, drop "
            f"{self.histories - self.kept} ({self.smaller_percent:.0f}% smaller)"
        ]
        for selection in self.selections:
            runs = selection.shape_runs
            lines.append(f"{selection.workflow_type}: {len(selection.entries)} histories, {len(runs)} command "
                         f"shape(s): keep {len(selection.kept)}")
            for item in selection.kept:
                reasons = "; ".join(f"{reason.kind} {reason.detail}".rstrip() for reason in item.reasons)
                lines.append(f"  keep {item.entry.label}: {reasons}")
            if details:
                for shape, count in sorted(runs.items(), key=lambda pair: (-pair[1], shape_id(pair[0]))):
                    lines.append(f"  shape {shape_id(shape)} ({count} run{'' if count == 1 else 's'}): {describe_shape(shape)}")
                lines.extend(f"  drop {entry.label}" for entry in selection.dropped)
            before = selection.before
            after = self.after.get(selection.workflow_type, CorpusCoverage())
            missing = self.missing_after(selection)
            verdict = "equal" if missing.empty else "NOT equal: " + _missing_text(missing)
            lines.append(f"  coverage before: {_counts(before)}; after (the kept set replayed again): {_counts(after)} "
                         f"({verdict})")
        if self.written is not None and self.out_dir is not None:
            lines.append(f"wrote {len(self.written.histories)} histories and {self.written.blobs} blob(s) to "
                         f"{self.out_dir}; the original histories are untouched")
            lines.extend(f"note: {text}" for text in self.written.missing_blobs)
        elif self.not_deleted:
            lines.append(f"deleted {len(self.deleted)} of {len(self.deleted) + len(self.not_deleted)} dropped histories "
                         f"(--prune); {len(self.not_deleted)} could not be deleted; blob stores are left as they are")
            lines.extend(f"  not deleted {display_path(path)}: {reason}" for path, reason in self.not_deleted)
        elif self.deleted:
            lines.append(f"deleted {len(self.deleted)} dropped histories (--prune); blob stores are left as they are")
        elif not self.covers_everything:
            lines.append("nothing written or deleted")
        else:
            lines.append("nothing written (a report only): --out DIR copies the kept set, --prune deletes the dropped "
                         "histories")
        lines.extend(f"note: {note}" for note in self.notes)
        return lines

    def data(self) -> dict[str, Any]:
        """The JSON document (its fields are listed in docs/design.md, "Corpus selection")."""
        return {
            "summary": {
                "histories": self.histories,
                "kept": self.kept,
                "dropped": self.histories - self.kept,
                "smaller_percent": round(self.smaller_percent, 1),
                "coverage_equal": self.covers_everything,
                "written": None if self.written is None else {
                    "folder": str(self.out_dir), "histories": len(self.written.histories), "blobs": self.written.blobs,
                    "missing_blobs": self.written.missing_blobs,
                },
                "deleted": [display_path(path) for path in self.deleted],
                "not_deleted": [{"path": display_path(path), "error": reason} for path, reason in self.not_deleted],
                "notes": list(self.notes),
            },
            "workflows": [self._workflow_data(selection) for selection in self.selections],
        }

    def _workflow_data(self, selection: WorkflowSelection) -> dict[str, Any]:
        after = self.after.get(selection.workflow_type, CorpusCoverage())
        missing = self.missing_after(selection)
        return {
            "workflow_type": selection.workflow_type,
            "histories": len(selection.entries),
            "kept": len(selection.kept),
            "shapes": [
                {"id": shape_id(shape), "runs": count, "commands": [list(command) for command in shape]}
                for shape, count in sorted(selection.shape_runs.items(), key=lambda pair: shape_id(pair[0]))
            ],
            "coverage_before": _counts_data(selection.before),
            "coverage_after": _counts_data(after),
            "coverage_equal": missing.empty,
            "missing_after": {
                "shapes": sorted(shape_id(shape) for shape in missing.shapes),
                "lines": [f"{display_path(path)}:{line}" for path, line in sorted(missing.lines)],
                "branches": [f"{display_path(path)}:{_arc_text(a, b)}" for path, a, b in sorted(missing.branches)],
            },
            "kept_histories": [
                {"history": item.entry.label, "digest": item.entry.digest,
                 "reasons": [{"kind": reason.kind, "detail": reason.detail} for reason in item.reasons]}
                for item in selection.kept
            ],
            "dropped_histories": [entry.label for entry in selection.dropped],
        }


def _counts(coverage: CorpusCoverage) -> str:
    return f"{len(coverage.shapes)} shapes, {len(coverage.lines)} lines, {len(coverage.branches)} branches"


def _counts_data(coverage: CorpusCoverage) -> dict[str, int]:
    return {"shapes": len(coverage.shapes), "lines": len(coverage.lines), "branches": len(coverage.branches)}


def _missing_text(missing: CorpusCoverage) -> str:
    parts = []
    if missing.shapes:
        parts.append("shapes " + ", ".join(sorted(shape_id(shape) for shape in missing.shapes)))
    if missing.lines:
        parts.append("lines " + _display_lines(missing.lines, display_path))
    if missing.branches:
        parts.append("branches " + _display_branches(missing.branches, display_path))
    return "; ".join(parts) + " missing from the kept set"
