"""The azure-functions-durable names replay reads beyond the documented API
(``replaytest/plugins/azure_durable/internals.py``), checked on the installed SDK: an upgrade that moves
one fails here, by name, rather than as a wrong replay."""

from __future__ import annotations

import datetime
import inspect
import json

from approvals import function_app

from replaytest.plugins.azure_durable import internals


def _body(history: list[dict[str, object]]) -> dict[str, object]:
    return {"history": history, "instanceId": "probe", "isReplaying": False, "parentInstanceId": None,
            "input": json.dumps({"id": "p", "items": ["ab", "c"]}), "upperSchemaVersion": 0}


START = [
    {"EventType": 12, "EventId": -1, "IsPlayed": False, "Timestamp": "2026-03-01T09:00:00Z"},
    {"EventType": 0, "EventId": -1, "IsPlayed": False, "Timestamp": "2026-03-01T09:00:00Z", "Name": "order_approval",
     "Version": "", "Input": json.dumps({"id": "p", "items": ["ab", "c"]})},
]


def test_the_emitted_actions_are_read_one_per_task_in_order() -> None:
    context = internals.new_context(_body(START))
    seen: list[int] = []

    def orchestrator(ctx):  # type: ignore[no-untyped-def]
        seen.append(internals.action_count(ctx))
        first = yield ctx.task_all([ctx.call_activity("check_stock", "ab"), ctx.call_activity("check_stock", "c")])
        seen.append(internals.action_count(ctx))
        yield ctx.create_timer(datetime.datetime(2026, 3, 2, tzinfo=datetime.timezone.utc))
        return first

    state, error = internals.run(orchestrator, context)
    assert error is None and state["isDone"] is False
    assert seen == [0]  # the fan-out is not complete: the generator never resumed
    actions = internals.emitted_actions(context)
    assert [(a["actionType"], a.get("functionName")) for a in actions] == [(0, "check_stock"), (0, "check_stock")]
    assert [json.loads(a["input"]) for a in actions] == ["ab", "c"]


def test_an_orchestrator_that_raises_gives_its_exception_and_the_state() -> None:
    def orchestrator(ctx):  # type: ignore[no-untyped-def]
        yield ctx.call_activity("check_stock", "ab")
        raise ValueError("no stock")

    history = [*START, {"EventType": 4, "EventId": 0, "IsPlayed": False, "Timestamp": "2026-03-01T09:00:00Z", "Name": "check_stock"},
               {"EventType": 12, "EventId": -1, "IsPlayed": False, "Timestamp": "2026-03-01T09:00:01Z"},
               {"EventType": 5, "EventId": -1, "IsPlayed": False, "Timestamp": "2026-03-01T09:00:01Z", "TaskScheduledId": 0, "Result": "2"}]
    state, error = internals.run(orchestrator, internals.new_context(_body(history)))
    assert isinstance(error, ValueError) and str(error) == "no stock"
    assert state["isDone"] is False and len(state["actions"]) == 1


def test_an_app_is_read_without_using_up_get_functions() -> None:
    import azure.durable_functions as df

    app = df.DFApp()  # its own app: the host may call get_functions() once per app

    @app.orchestration_trigger(context_name="context")
    def approve(context):  # type: ignore[no-untyped-def]
        yield context.call_activity("notify", "x")

    @app.activity_trigger(input_name="who")
    def notify(who: str) -> str:
        return who

    for _ in range(2):
        orchestrators = internals.registered_orchestrators(app)
        assert list(orchestrators) == ["approve"] and inspect.isgeneratorfunction(orchestrators["approve"])
        assert [a.__name__ for a in internals.registered_activities(app)] == ["notify"]
    assert sorted(f.get_function_name() for f in app.get_functions()) == ["approve", "notify"]  # the host's call still works


def test_the_approvals_app_declares_its_orchestrators_and_activities() -> None:
    assert sorted(internals.registered_orchestrators(function_app.app)) == ["order_approval", "ship_order"]
    activities = internals.registered_activities(function_app.app)
    assert sorted(a.__name__ for a in activities) == ["auto_approve", "book_courier", "check_stock", "price_order", "print_label"]


def test_a_blueprint_is_read_like_an_app() -> None:
    import azure.durable_functions as df

    blueprint = df.Blueprint()

    @blueprint.orchestration_trigger(context_name="context")
    def refund(context):  # type: ignore[no-untyped-def]
        yield context.call_activity("pay_back", 1)

    @blueprint.activity_trigger(input_name="amount")
    def pay_back(amount: int) -> int:
        return amount

    orchestrators = internals.registered_orchestrators(blueprint)
    assert list(orchestrators) == ["refund"] and inspect.isgeneratorfunction(orchestrators["refund"])
    assert [a.__name__ for a in internals.registered_activities(blueprint)] == ["pay_back"]
