"""Recording prompt versions in Temporal histories: ``use_prompt`` and ``PromptInterceptor``.

Temporal stores the headers of every scheduled activity and started child workflow in the history
(``ActivityTaskScheduled``, ``StartChildWorkflowExecutionInitiated``) and of the run itself in its
first event (``WorkflowExecutionStarted``). ``PromptInterceptor`` — a client and a worker interceptor
in one — writes two headers there, so no activity signature changes:

* ``replaytest-prompt`` on an activity or child workflow scheduled inside ``with use_prompt(P):``:
  ``{"name": …, "version": …, "params": …}`` of the prompt that call used (its full version: text,
  model and parameters; ``params`` only when it declares them);
* ``replaytest-prompts`` on the start of a run (and on continue-as-new and child workflows): the
  run's prompt manifest, ``{name: version}`` of every prompt its workflow class can use
  (``replaytest.prompts.prompt_manifest``; give the interceptor the workflow classes to know them).

Replay reads both back (``temporal.replayer``) and compares them with the current code. Headers are
written with temporalio's default payload converter (plain JSON), never through a codec, so any
tool can read them.

Workflow code imports this module inside Temporal's sandbox, which re-imports it per run: state the
interceptor and the workflow code share is therefore kept on the workflow instance
(``workflow.instance()``), the one object both copies see, as a ``ContextVar`` so concurrent
coroutines of one workflow each have their own current prompt.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from temporalio import client, workflow
from temporalio import worker as temporal_worker
from temporalio.api.common.v1 import Payload

from replaytest.plugins.temporal.internals import workflow_definition
from replaytest.prompts import prompt_manifest

PROMPT_HEADER = "replaytest-prompt"
MANIFEST_HEADER = "replaytest-prompts"
_VARIABLE = "__replaytest_prompt_variable__"


def _variable(create: bool) -> contextvars.ContextVar[tuple[str, str, Any] | None] | None:
    try:
        instance = workflow.instance()
    except Exception:  # not in workflow code (a test calling the helper directly)
        return None
    variable = getattr(instance, _VARIABLE, None)
    if variable is None and create:
        variable = contextvars.ContextVar("replaytest_prompt", default=None)
        try:
            setattr(instance, _VARIABLE, variable)
        except (AttributeError, TypeError):  # a workflow class with __slots__: nowhere to keep it
            return None
    return variable


@contextmanager
def use_prompt(prompt: Any) -> Iterator[Any]:
    """In workflow code: activities and child workflows started in this block used ``prompt``
    (a ``replaytest.prompts.Prompt``); their headers record its name and version."""
    variable = _variable(create=True)
    if variable is None:
        yield prompt
        return
    # The full version (text, model, parameters): a model switch is drift too (``replaytest.prompts``).
    full = getattr(prompt, "full_version", None)
    params = getattr(prompt, "params", None)
    token = variable.set((str(prompt.name), str(full if full is not None else prompt.version), params))
    try:
        yield prompt
    finally:
        variable.reset(token)


def current_prompt() -> tuple[str, str] | None:
    """``(name, version)`` set by the innermost ``use_prompt`` around the running workflow code."""
    variable = _variable(create=False)
    value = None if variable is None else variable.get()
    return None if value is None else (value[0], value[1])


def current_prompt_params() -> dict[str, Any] | None:
    """The model parameters the innermost ``use_prompt``'s prompt declares (None when none)."""
    variable = _variable(create=False)
    value = None if variable is None else variable.get()
    return None if value is None or not value[2] else dict(value[2])


def _prompt_header() -> Payload | None:
    prompt = current_prompt()
    if prompt is None:
        return None
    record: dict[str, Any] = {"name": prompt[0], "version": prompt[1]}
    params = current_prompt_params()
    if params is not None:
        record["params"] = params
    return json_payload(record)


def json_payload(value: Any) -> Payload:
    """``value`` as a ``json/plain`` payload (compact, sorted keys: the same bytes every time)."""
    data = json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return Payload(metadata={"encoding": b"json/plain"}, data=data)


def read_json_header(headers: Mapping[str, Payload], name: str) -> Any:
    """The JSON value of header ``name`` (None if absent or not JSON)."""
    payload = headers.get(name)
    if payload is None or payload.metadata.get("encoding") != b"json/plain":
        return None
    try:
        return json.loads(payload.data)
    except ValueError:
        return None


class PromptInterceptor(client.Interceptor, temporal_worker.Interceptor):
    """Records prompt versions in Temporal histories (see the module docstring).

    ``PromptInterceptor(MyWorkflow, ...)``: pass it to ``Client.connect(interceptors=[...])`` (workers
    built on that client use it too) or to ``Worker(interceptors=[...])`` alone (then run manifests
    are written only for child workflows and continue-as-new). The workflow classes let the client
    side compute a run's manifest from the workflow type it starts.
    """

    def __init__(self, *workflows: type | Sequence[type]) -> None:
        self._classes: dict[str, type] = {}
        for item in workflows:
            for cls in item if isinstance(item, (list, tuple)) else (item,):
                definition = workflow_definition(cls)
                if definition is not None and definition.name is not None:
                    self._classes[definition.name] = cls

    def manifest_for(self, workflow_type: str) -> dict[str, str] | None:
        cls = self._classes.get(workflow_type)
        return None if cls is None else prompt_manifest(cls)

    # client side
    def intercept_client(self, next: client.OutboundInterceptor) -> client.OutboundInterceptor:
        return _ClientOutbound(next, self)

    # worker side
    def workflow_interceptor_class(
        self, input: temporal_worker.WorkflowInterceptorClassInput
    ) -> type[temporal_worker.WorkflowInboundInterceptor] | None:
        owner = self

        class _Inbound(temporal_worker.WorkflowInboundInterceptor):
            def init(self, outbound: temporal_worker.WorkflowOutboundInterceptor) -> None:
                super().init(_WorkflowOutbound(outbound, owner))

        return _Inbound


class _ClientOutbound(client.OutboundInterceptor):
    def __init__(self, next: client.OutboundInterceptor, owner: PromptInterceptor) -> None:
        super().__init__(next)
        self._owner = owner

    async def start_workflow(self, input: client.StartWorkflowInput) -> Any:
        manifest = self._owner.manifest_for(input.workflow)
        if manifest is not None:
            input.headers = {**input.headers, MANIFEST_HEADER: json_payload(manifest)}
        return await super().start_workflow(input)


class _WorkflowOutbound(temporal_worker.WorkflowOutboundInterceptor):
    def __init__(self, next: temporal_worker.WorkflowOutboundInterceptor, owner: PromptInterceptor) -> None:
        super().__init__(next)
        self._owner = owner

    def start_activity(self, input: temporal_worker.StartActivityInput) -> Any:
        header = _prompt_header()
        if header is not None:
            input.headers = {**input.headers, PROMPT_HEADER: header}
        return super().start_activity(input)

    async def start_child_workflow(self, input: temporal_worker.StartChildWorkflowInput) -> Any:
        headers = dict(input.headers)
        header = _prompt_header()
        if header is not None:
            headers[PROMPT_HEADER] = header
        manifest = self._owner.manifest_for(input.workflow)
        if manifest is not None:
            headers[MANIFEST_HEADER] = json_payload(manifest)
        input.headers = headers
        return await super().start_child_workflow(input)

    def continue_as_new(self, input: temporal_worker.ContinueAsNewInput) -> NoReturn:
        # The next run starts under the code running now.
        manifest = self._owner.manifest_for(input.workflow) if isinstance(input.workflow, str) else None
        if manifest is None:
            manifest = prompt_manifest(type(workflow.instance()))
        input.headers = {**input.headers, MANIFEST_HEADER: json_payload(manifest)}
        super().continue_as_new(input)
