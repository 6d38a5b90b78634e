"""Recording prompt versions in LangGraph threads: the run's prompt manifest in its checkpoint metadata.

LangGraph copies the scalar entries of ``config["metadata"]`` into the metadata of every checkpoint the
invocation writes, the input checkpoint included. ``with_prompts(config, entrypoint)`` returns the config
with ``replaytest_prompts`` added there: the manifest (``{prompt name: version}``,
``replaytest.prompts.prompt_manifest`` of the entrypoint's function) as one JSON string, since LangGraph
keeps only strings, numbers and booleans. ``replaytest import langgraph`` reads it from the input
checkpoint of the thread's latest invocation as the history's ``prompt_manifest``; a resume with
``Command(resume=…)`` writes to that same checkpoint, so the manifest stays the one the run started under.

A task's stored result is all LangGraph keeps of its call, so per-call versions are not recorded:
``use_prompt(P)`` around a task call (or the task's own body naming ``P``) tells replay which recorded
call used which prompt, and the version that call used is taken from the manifest.

Per-call records (threads recorded since): importing this module registers the recorder of
``replaytest.plugins.langgraph.recording``. ``Prompt.render()`` (or ``use_prompt(P)``) inside a running
``@task`` or node, and ``use_prompt(P)`` around a task call, write the version the call actually used
into the thread's checkpoint writes (channel ``__replaytest_prompt__``, a task id of its own, so the
run itself does not change). ``replaytest import langgraph`` puts each on its task's event
(``Event.prompt``), and replay compares it with the current code's version at that call, as on the
journal (``--prompts fail|warn``). Threads without records fall back to the manifest, with a note.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from replaytest.plugins.langgraph import internals as lg
from replaytest.prompts import prompt_manifest, use_prompt

METADATA_KEY = "replaytest_prompts"

__all__ = ["METADATA_KEY", "manifest_of", "use_prompt", "with_prompts"]


def manifest_of(*workflows: Any) -> dict[str, str]:
    """The prompt manifest of ``@entrypoint`` graphs (their functions are walked) or plain functions."""
    roots = []
    for workflow in workflows:
        node = lg.entrypoint_node(workflow)
        if node is not None:
            bound = node[1]
            roots.append(getattr(bound, "func", None) or getattr(bound, "afunc", None) or bound)
        else:
            roots.append(workflow)
    return prompt_manifest(*roots)


def with_prompts(config: Mapping[str, Any] | None, *workflows: Any) -> dict[str, Any]:
    """A copy of ``config`` (a LangGraph ``RunnableConfig``) whose metadata records the prompt manifest
    of ``workflows``: pass it to ``invoke``/``stream`` when a thread starts."""
    copied = dict(config or {})
    metadata = dict(copied.get("metadata") or {})
    metadata[METADATA_KEY] = json.dumps(manifest_of(*workflows), sort_keys=True, separators=(",", ":"))
    copied["metadata"] = metadata
    return copied


# The per-call recorder: registered by importing this module (what application code using
# ``with_prompts``/``use_prompt`` from here does).
from replaytest.plugins.langgraph import recording as _recording  # noqa: E402

_recording.install()
