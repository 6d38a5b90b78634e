"""The one module that touches azure-functions-durable beyond its documented API.

Replay runs an orchestrator with the SDK's own ``DurableOrchestrationContext.from_json`` and
``Orchestrator.handle`` (public); what it reads besides is here, so an SDK upgrade that moves it breaks
one module (and ``tests/azure_durable/test_internals.py``), and the version range in pyproject stays
bounded to the versions tested:

* ``context._actions``: the actions the orchestrator has emitted so far, read while it runs, so each
  action is tied to the ``yield`` that emitted it (the state JSON ``handle`` returns has them too, but
  only once the run stops);
* ``DFApp._function_builders`` (azure-functions): the functions an app declares, read without
  ``get_functions()``, which an app allows only once;
* the ``$OutOfProcData$:`` tail of the exception ``handle`` raises when the orchestrator raised: the SDK
  appends the orchestration state JSON to the message there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

TESTED_VERSIONS = ">=1.5,<1.8"
_STATE_LABEL = "$OutOfProcData$:"


def sdk_version() -> str:
    from importlib.metadata import version

    return version("azure-functions-durable")


def new_context(body: dict[str, Any]) -> Any:
    """A ``DurableOrchestrationContext`` for a host request body (history, instance id, input)."""
    from azure.durable_functions.models import DurableOrchestrationContext

    return DurableOrchestrationContext.from_json(json.dumps(body))


def run(function: Callable[..., Any], context: Any) -> tuple[dict[str, Any], BaseException | None]:
    """Replay ``function`` over the context's history: the orchestration state the SDK reports, and the
    exception the orchestrator raised (None when it returned or is waiting)."""
    from azure.durable_functions import Orchestrator

    try:
        state_text = Orchestrator(function).handle(context)
    except Exception as error:
        message = str(error)
        _, found, tail = message.partition(_STATE_LABEL)
        state = json.loads(tail) if found else {"isDone": False}
        return state, error.__cause__ or error
    return json.loads(state_text), None


def action_count(context: Any) -> int:
    """How many atomic actions the orchestrator has emitted so far."""
    return sum(1 for _ in _atomic(context._actions))


def emitted_actions(context: Any) -> list[dict[str, Any]]:
    """The atomic actions the orchestrator emitted, in order, each as the SDK's action JSON
    (``actionType``, ``functionName``, ``externalEventName``, …)."""
    return [action.to_json() for action in _atomic(context._actions)]


def _atomic(actions: Any) -> Iterator[Any]:
    for item in actions:
        if isinstance(item, list):
            yield from _atomic(item)
        elif getattr(item, "compound_tasks", None) is not None:
            yield from _atomic(item.compound_tasks)
        else:
            yield item


def registered_activities(obj: Any) -> list[Callable[..., Any]]:
    """The activity and entity functions of a ``DFApp``/``Blueprint`` (none for anything else): what a
    replay must never run, even when orchestration code calls one directly."""
    found = []
    for function in _app_functions(obj) or ():
        if any(getattr(b, "type", None) in ("activityTrigger", "entityTrigger") for b in function.get_bindings()):
            handle = function.get_user_function()
            found.append(handle)
            # An entity is registered as the handle ``Entity.create`` makes; the user's function is behind it.
            inner = getattr(handle, "entity_function", None)
            if callable(inner):
                found.append(inner)
    return found


_INDEXED: dict[int, tuple[Any, list[Any]]] = {}


def _app_functions(obj: Any) -> list[Any] | None:
    """The functions a ``DFApp``/``Blueprint`` declares (None for anything else). Read from the app's
    function builders, not ``get_functions()``: an app answers that only once (the host indexes it once)
    and the application may still need it. An SDK without the builders falls back to one
    ``get_functions()`` call per app, remembered."""
    import inspect

    if inspect.isfunction(obj):
        return None
    builders = getattr(obj, "_function_builders", None)
    if isinstance(builders, list):
        return [builder._function for builder in builders if getattr(builder, "_function", None) is not None]
    if not callable(getattr(obj, "get_functions", None)):
        return None
    known = _INDEXED.get(id(obj))
    if known is None or known[0] is not obj:
        known = (obj, list(obj.get_functions()))
        _INDEXED[id(obj)] = known
    return known[1]


def registered_orchestrators(obj: Any) -> dict[str, Callable[..., Any]]:
    """The orchestrator generator functions ``obj`` holds by orchestration name: a ``DFApp`` or
    ``Blueprint`` (its functions with an ``orchestrationTrigger``), an ``Orchestrator.create`` handle, or
    a generator function (named after itself)."""
    import inspect

    found: dict[str, Callable[..., Any]] = {}
    functions = _app_functions(obj)
    if functions is not None:
        for function in functions:
            if any(getattr(b, "type", None) == "orchestrationTrigger" for b in function.get_bindings()):
                handle = function.get_user_function()
                found[function.get_function_name()] = getattr(handle, "orchestrator_function", handle)
        return found
    inner = getattr(obj, "orchestrator_function", None)
    if callable(inner):
        found[getattr(obj, "__name__", inner.__name__)] = inner
    elif inspect.isgeneratorfunction(obj):
        found[obj.__name__] = obj
    return found
