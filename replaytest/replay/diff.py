"""``replaytest diff A B``: where two neutral histories of the same workflow part.

Compares the *command streams* (kind, name, arguments digest, prompt version, patch id per event), not
results: two runs that made the same decisions in the same order are identical even if a model
answered differently. The first difference is a ``Divergence`` (``A`` on the recorded side, ``B`` on the
issued side) so the shared report renders it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from replaytest.history import Event, History, load_history
from replaytest.replay.divergence import CommandView, Divergence

_CONTEXT = 6


@dataclass(frozen=True)
class HistoryDiff:
    """The two histories compared and their first difference (None when the command streams match)."""

    a: History
    b: History
    divergence: Divergence | None

    @property
    def identical(self) -> bool:
        return self.divergence is None


class DiffError(Exception):
    """The two histories cannot be compared (different workflow types)."""


def event_view(event: Event) -> CommandView:
    detail = {"patch_id": event.patch_id} if event.patch_id else {}
    version = event.prompt.version if event.prompt is not None else None
    return CommandView(event.kind, event.name, event.seq, event.args_digest, version, detail)


def diff_files(a: Path, b: Path, compare_args: bool = True) -> HistoryDiff:
    """Load both (``HistoryError`` if either is malformed) and compare them."""
    return diff_histories(load_history(a), load_history(b), compare_args)


def diff_histories(a: History, b: History, compare_args: bool = True) -> HistoryDiff:
    """``compare_args=False`` looks only at the decisions (kind, name, prompt, patch), so two runs on
    different inputs part where their code paths part rather than at the first argument."""
    if a.workflow.type != b.workflow.type:
        raise DiffError(f"different workflow types: {a.workflow.type!r} and {b.workflow.type!r}")
    for index in range(max(len(a.events), len(b.events))):
        left = a.events[index] if index < len(a.events) else None
        right = b.events[index] if index < len(b.events) else None
        kind, message = _difference(left, right, compare_args)
        if kind is not None:
            low, high = max(0, index - _CONTEXT), index + _CONTEXT + 1
            return HistoryDiff(
                a,
                b,
                Divergence(
                    kind=kind,
                    position=index + 1,
                    message=message,
                    recorded=event_view(left) if left is not None else None,
                    issued=event_view(right) if right is not None else None,
                    recorded_context=tuple(event_view(e) for e in a.events[low:high]),
                    issued_context=tuple(event_view(e) for e in b.events[low:high]),
                ),
            )
    return HistoryDiff(a, b, None)


def _difference(left: Event | None, right: Event | None, compare_args: bool) -> tuple[str | None, str]:
    if left is None and right is not None:
        return "extra-command", f"B continues with {right.kind} {right.name!r} after A's last event"
    if right is None and left is not None:
        return "missing-command", f"B ends before A's {left.kind} {left.name!r}"
    assert left is not None and right is not None
    if left.patch_id != right.patch_id:
        return "patch-mismatch", f"patch markers differ: A {left.patch_id!r}, B {right.patch_id!r}"
    if (left.kind, left.name) != (right.kind, right.name):
        return "command-mismatch", f"A recorded {left.kind} {left.name!r}, B {right.kind} {right.name!r}"
    if compare_args and left.args_digest != right.args_digest:
        return "args-mismatch", f"{left.kind} {left.name!r} was called with other arguments"
    left_prompt = left.prompt.version if left.prompt else None
    right_prompt = right.prompt.version if right.prompt else None
    if left_prompt != right_prompt:
        return "prompt-drift", f"{left.kind} {left.name!r} used prompt {left_prompt} in A, {right_prompt} in B"
    return None, ""
