"""Every temporalio private name replaytest relies on, in one module, for the versions it is tested with.

temporalio offers no public way to ask which workflow type a class registers (``@workflow.defn(name=…)``)
or whether it is the dynamic workflow: both are read from ``temporalio.workflow._Definition``, the
object ``@workflow.defn`` attaches to the class. Replay sorts user classes by that name and the prompt
interceptor maps workflow types to classes with it.

(The replay cache, which may not import plugins, also reads the attribute ``__temporal_workflow_definition``
by name, and only its ``name``; it degrades to the class name when the attribute is missing.)

pyproject's ``temporal`` extra bounds temporalio to the versions the tests run (the oldest in
``.ci/compat-matrix``, the newest in the main suite); tests/temporal/test_temporal_internals.py pins this
module to what the public decorator declares.
"""

from __future__ import annotations

from typing import Any


def workflow_definition(cls: Any) -> Any | None:
    """The definition ``@workflow.defn`` attached to ``cls`` (``.name`` — ``None`` for the dynamic
    workflow —, ``.cls``), or ``None`` when ``cls`` is not a Temporal workflow class."""
    from temporalio.workflow import _Definition

    return _Definition.from_class(cls)
