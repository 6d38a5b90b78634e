"""The selection itself (``replay.corpus.select_workflow``), on entries written by hand: greedy cover,
ties by digest, what is always kept, and the keep-reason vocabulary as docs/design.md lists it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from replaytest.replay.corpus import KEEP_REASONS, CorpusEntry, KeepReason, must_keep, select_workflow
from replaytest.replay.coverage import HistoryCoverage

DESIGN = (Path(__file__).resolve().parents[2] / "docs" / "design.md").read_text(encoding="utf-8")
ASK = (("step", "ask", ""),)
ASK_AND_PAY = (("step", "ask", ""), ("step", "pay", ""))


def _entry(name: str, digest: str, shape: tuple[tuple[str, str, str], ...] | None, lines: set[int],
           branches: set[tuple[int, int]] = frozenset(), status: str = "passed", run_status: str | None = "completed") -> CorpusEntry:
    reason, detail = must_keep(status, run_status)
    return CorpusEntry(
        Path(f"{name}.json"), f"{name}.json", digest, "agent", shape,
        HistoryCoverage(frozenset(("agent.py", line) for line in lines),
                        frozenset(("agent.py", a, b) for a, b in branches)),
        status, reason, detail,
    )


def _kept(entries: list[CorpusEntry]) -> list[tuple[str, list[str]]]:
    selection = select_workflow("agent", entries)
    return [(item.entry.label, [reason.kind for reason in item.reasons]) for item in selection.kept]


def test_greedy_takes_the_largest_gain_first_and_stops_when_everything_is_covered() -> None:
    entries = [
        _entry("small", "sha256:01", ASK, {1, 2}),
        _entry("big", "sha256:09", ASK_AND_PAY, {1, 2, 3, 4}, {(2, 3)}),
        _entry("same-shape-other-line", "sha256:05", ASK, {1, 2, 5}, {(2, 5)}),
        _entry("nothing-new", "sha256:00", ASK, {1, 5}),
    ]
    # big adds 6 (shape, 4 lines, 1 branch); then same-shape-other-line adds 3 (shape ASK, line 5, branch
    # 2->5) where nothing-new adds 2 and small 1; small and nothing-new then add nothing.
    assert _kept(entries) == [("big.json", ["shape", "lines", "branches"]),
                              ("same-shape-other-line.json", ["shape", "lines", "branches"])]
    selection = select_workflow("agent", entries)
    assert [entry.label for entry in selection.dropped] == ["nothing-new.json", "small.json"]


def test_equal_gains_go_to_the_smallest_digest_whatever_the_order_given() -> None:
    twins = [_entry("b", "sha256:bb", ASK, {1}), _entry("a", "sha256:cc", ASK, {1}), _entry("c", "sha256:aa", ASK, {1})]
    assert _kept(twins) == [("c.json", ["shape", "lines"])]
    assert _kept(list(reversed(twins))) == [("c.json", ["shape", "lines"])]


def test_in_flight_unknown_status_and_unclean_histories_are_kept_though_they_add_nothing() -> None:
    entries = [
        _entry("done", "sha256:01", ASK, {1, 2}),
        _entry("parked", "sha256:02", ASK, {1, 2}, run_status="parked"),
        _entry("running", "sha256:03", ASK, {1}, run_status="running"),
        _entry("no-status", "sha256:04", ASK, {1}, run_status=None),
        _entry("broken", "sha256:05", None, set(), status="error", run_status=None),
    ]
    kept = dict(_kept(entries))
    assert kept == {
        "parked.json": ["in-flight", "shape", "lines"],
        "running.json": ["in-flight"],
        "no-status.json": ["unknown-run-status"],
        "broken.json": ["not-replayed-cleanly"],
    }
    assert [reason.detail for item in select_workflow("agent", entries).kept for reason in item.reasons[:1]] == [
        "parked", "running", "the history does not record whether the run finished", "error"]


def test_a_keep_reason_outside_the_vocabulary_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown keep reason 'rare'"):
        KeepReason("rare", "")


def test_the_design_document_lists_the_keep_reasons_in_order() -> None:
    section = DESIGN.split("Keep reasons (`replay.corpus.KEEP_REASONS`", 1)[1].split("—", 1)[0]
    assert tuple(re.findall(r"`([a-z-]+)`", section)) == KEEP_REASONS


def _eager(entries: list[CorpusEntry]) -> list[str]:
    """Greedy set cover written out plainly: rescan every candidate each round."""
    def items(entry: CorpusEntry) -> set[object]:
        return {("shape", entry.shape), *(("line", line) for line in entry.coverage.lines),
                *(("branch", branch) for branch in entry.coverage.branches)}

    pool = sorted(entries, key=lambda entry: (entry.digest, entry.label))
    covered: set[object] = set()
    chosen = []
    while True:
        gains = [(len(items(entry) - covered), entry) for entry in pool]
        best = max((gain for gain, _ in gains), default=0)
        if best == 0:
            return chosen
        entry = next(entry for gain, entry in gains if gain == best)
        chosen.append(entry.label)
        covered |= items(entry)
        pool.remove(entry)


def test_the_selection_makes_the_choices_of_a_plain_greedy_cover_on_random_corpora() -> None:
    import random

    generator = random.Random(21)
    for _ in range(200):
        shapes = [tuple(("step", f"s{i}", "") for i in range(n)) for n in range(1, 5)]
        entries = [
            _entry(f"h{index}", f"sha256:{generator.randrange(16**6):06x}", generator.choice(shapes),
                   set(generator.sample(range(1, 15), generator.randrange(0, 6))),
                   {(a, a + 1) for a in generator.sample(range(1, 15), generator.randrange(0, 3))})
            for index in range(generator.randrange(1, 25))
        ]
        assert [item.entry.label for item in select_workflow("agent", entries).kept] == _eager(entries)
