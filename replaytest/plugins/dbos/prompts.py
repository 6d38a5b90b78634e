"""Recording prompt versions in DBOS runs: the run's prompt manifest in its workflow attributes.

DBOS writes a workflow's *attributes* (``SetWorkflowAttributes``, a JSON map) into its
``workflow_status`` row when the run is created: no operation, so the run's function ids are the same
with or without it, and no extra write. ``with_prompts(workflow)`` puts the manifest there under
``replaytest_prompts`` (``{prompt name: version}``, ``replaytest.prompts.prompt_manifest`` of the
workflow) for the runs started or enqueued in its block; ``replaytest import dbos`` reads it back as the
history's ``prompt_manifest``.

DBOS stores nothing per step that could carry a prompt version without changing what the step returns,
so per-call versions are not recorded: ``use_prompt(P)`` around a step call (or the step's own body
naming ``P``) tells replay which recorded call used which prompt, and the version that call used is
taken from the manifest (the version in force when the run started).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from replaytest.prompts import prompt_manifest, use_prompt

ATTRIBUTE = "replaytest_prompts"

__all__ = ["ATTRIBUTE", "prompt_attributes", "use_prompt", "with_prompts"]


def prompt_attributes(*workflows: Any, attributes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``attributes`` (the application's own, kept as they are) plus the manifest of ``workflows``
    (``@DBOS.workflow()`` functions or classes), for ``SetWorkflowAttributes``."""
    merged = dict(attributes or {})
    merged[ATTRIBUTE] = prompt_manifest(*workflows)
    return merged


@contextmanager
def with_prompts(*workflows: Any, attributes: Mapping[str, Any] | None = None) -> Iterator[None]:
    """Runs of ``workflows`` started or enqueued in this block record their prompt manifest (and
    ``attributes``, since DBOS keeps the innermost ``SetWorkflowAttributes`` block's map only)."""
    from dbos import SetWorkflowAttributes

    with SetWorkflowAttributes(prompt_attributes(*workflows, attributes=attributes)):
        yield
