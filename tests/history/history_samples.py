"""A valid history (as parsed JSON) that the history tests mutate."""

from __future__ import annotations

from typing import Any


DIGEST = "sha256:" + "ab" * 32
VERSION = "sha256:" + "cd" * 32

VALID: dict[str, Any] = {
    "format": "replaytest-history",
    "format_version": 1,
    "workflow": {"type": "support_agent", "id": "task-42", "run_id": "r-1", "engine": "journal"},
    "code_version": "2026-11-28.1",
    "prompt_versions": {"planner": VERSION},
    "status": "completed",
    "input": {"ticket": "Where is my order?", "customer": {"email": "ann@example.com", "name": "Ann"}},
    "events": [
        {"seq": 1, "kind": "model", "name": "plan", "args_digest": DIGEST, "prompt": {"name": "planner", "version": VERSION}, "result": "look up orders"},
        {"seq": 2, "kind": "step", "name": "fetch orders", "args_digest": DIGEST, "result": [{"id": 7, "token": "s3cret"}]},
        {"seq": 3, "kind": "step", "name": "email finance", "idempotency_key": "r-1:3", "result": {"sent": True}},
        {"seq": 4, "kind": "timer", "name": "wait approval", "duration_s": 86400},
        {"seq": 5, "kind": "signal", "name": "approved", "result": {"by": "ops"}},
        {"seq": 6, "kind": "marker", "name": "patched", "patch_id": "v2-summary"},
        {"seq": 7, "kind": "step", "name": "charge", "error": {"type": "StepFailed", "message": "card declined"}, "x-importer": {"attempt": 3}},
    ],
    "result": "done",
}
