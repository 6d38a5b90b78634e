"""What a resume rehearsal may deliver to a parked run: the signal payloads the histories of one replay
batch recorded, by engine, workflow type and signal name.

A run parked at a signal wait has not received that signal, so its own history holds no payload for it;
the finished runs of the same workflow type do. Replayers remember each recorded signal payload here while
they replay with ``ReplayOptions.rehearse`` (``remember_signal``), and a rehearsal delivers the one
recorded for the same name (``recorded_signal``), else none, and says which. ``replay.batch.replay_many``
clears the samples before a batch and rehearses the in-flight runs once every history has been seen.
"""

from __future__ import annotations

import json
from typing import Any

# A payload larger than this (as JSON) is not kept: rehearsals need a typical value, not every value.
MAX_SAMPLE_BYTES = 64 * 1024
MAX_SAMPLES = 10_000

_samples: dict[tuple[str, str, str], Any] = {}


def clear() -> None:
    _samples.clear()


def remember_signal(engine: str, workflow_type: str, name: str, payload: Any) -> None:
    """Keep the first payload recorded for this signal of this workflow type (bounded in size and count)."""
    key = (engine, workflow_type, name)
    if key in _samples or len(_samples) >= MAX_SAMPLES:
        return
    try:
        if len(json.dumps(payload, default=str)) > MAX_SAMPLE_BYTES:
            return
    except (TypeError, ValueError):
        return
    _samples[key] = payload


def recorded_signal(engine: str, workflow_type: str, name: str) -> tuple[bool, Any]:
    """The payload a history of this batch recorded for this signal, and whether one did."""
    key = (engine, workflow_type, name)
    if key in _samples:
        return True, _samples[key]
    return False, None
