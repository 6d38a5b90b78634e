"""Journal entries the order desk does not write, recorded on a real Restate server: a virtual object that
lists its state keys (``ctx.state_keys``), clears a key (``ctx.clear``) and all of them (``ctx.clear_all``),
calls a service by name (``ctx.generic_call``) and sends to another object (``ctx.object_send``); a
handler that resolves another invocation's awakeable (``ctx.resolve_awakeable``), sends by name
(``ctx.generic_send``) and cancels an invocation (``ctx.cancel_invocation``); one that rejects an awakeable
(``ctx.reject_awakeable``) and sends to a workflow (``ctx.workflow_send``); a workflow's durable promise
peeked at and resolved by a shared handler (``promise.peek`` / ``resolve``) while ``promise.value`` waits,
or rejected (``promise.reject``); a handler that calls a workflow's shared handler (``ctx.workflow_call``)
and attaches to a finished invocation (``ctx.attach_invocation``). The recorded invocations
replay green on the code that recorded them; each changed command is a divergence at its line."""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path
from types import ModuleType

import pytest
from restate_kit import HERE, call, send, import_histories, line_of, running_desk, step_result, wait_for_status

from replaytest.plugins.restate.replayer import RestateReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.report import render_text

pytestmark = [pytest.mark.slow]

SOURCE = HERE / "restate_locker" / "lockers.py"
_counter = itertools.count()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The histories of ``locker/box-1/empty`` (after ``store`` filled the locker) and ``porter/hand_over``."""
    folder = tmp_path_factory.mktemp("restate-locker")
    with running_desk(folder, app="restate_locker.lockers:app", warmup=("porter/carry", "warmup")) as desk:
        call(desk.ingress, "locker/box-1/store", "umbrella")
        emptied, answer = call(desk.ingress, "locker/box-1/empty", "closing time")
        assert answer == {"keys": ["contents", "owner"], "contents": ["umbrella"], "carried": "carried closing time"}
        waiting = send(desk.ingress, "porter/wait_for_key", "ann")
        napping = send(desk.ingress, "porter/nap", 60)
        wait_for_status(desk.admin, waiting, "suspended")
        awakeable = step_result(desk.admin, waiting, "publish")
        handed, answer = call(desk.ingress, "porter/hand_over", {"awakeable": awakeable, "napping": napping})
        assert answer == "handed over"
        turned_waiter = send(desk.ingress, "porter/wait_for_key", "bob")
        wait_for_status(desk.admin, turned_waiter, "suspended")
        turned, answer = call(desk.ingress, "porter/turn_away",
                              {"awakeable": step_result(desk.admin, turned_waiter, "publish"), "parcel": "p-2"})
        assert answer == "turned away"
        delivery = send(desk.ingress, "parcel/p-1/deliver", "the lobby")
        wait_for_status(desk.admin, delivery, "suspended")
        signed, answer = call(desk.ingress, "parcel/p-1/sign", "ann")
        assert answer == "signed by ann (before: None)"
        for invocation in (emptied, handed, waiting, turned_waiter, turned, delivery, signed):
            wait_for_status(desk.admin, invocation, "completed")
        checked, answer = call(desk.ingress, "porter/check_parcel", {"parcel": "p-1", "delivery": delivery})
        assert answer == {"status": "signed by ann", "delivered": "delivered to the lobby, signed by ann"}
        refused, answer = call(desk.ingress, "parcel/p-2/refuse", "nobody home")
        assert answer == "refused: nobody home"
        roles = {"emptied": emptied, "handed": handed, "turned": turned, "delivery": delivery, "signed": signed,
                 "checked": checked, "refused": refused}
        for invocation in roles.values():
            import_histories(desk.admin, folder / "histories", "--invocation", invocation)
    return {role: folder / "histories" / f"{invocation}.json" for role, invocation in roles.items()}


@pytest.fixture
def emptied(recorded: dict[str, Path]) -> Path:
    return recorded["emptied"]


def _variant(folder: Path, old: str, new: str) -> tuple[ModuleType, Path]:
    source = SOURCE.read_text(encoding="utf-8")
    assert source.count(old) == 1, f"{old!r} occurs {source.count(old)} times"
    path = folder / f"lockers_variant_{next(_counter)}.py"
    path.write_text(source.replace(old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def _replay(history: Path, module: ModuleType) -> ReplayResult:
    return RestateReplayer().replay(history, WorkflowSet((module.app,)), ReplayOptions())


def test_the_history_holds_each_entry(emptied: Path) -> None:
    document = json.loads(emptied.read_text())
    assert [(event["kind"], event["name"]) for event in document["events"]] == [
        ("step", "state keys"), ("step", "get contents"), ("step", "clear contents"), ("step", "clear all state"),
        ("child-workflow", "porter/carry"), ("child-workflow", "locker/store (send)"),
    ]
    entries = [entry["type"] for event in document["events"] for entry in event["journal"]]
    assert {"Command: GetEagerStateKeys", "Command: ClearState", "Command: ClearAllState", "Command: Call",
            "Command: OneWayCall"} <= set(entries)


def test_the_recording_code_replays_green(emptied: Path, tmp_path: Path) -> None:
    module, _ = _variant(tmp_path, "ctx.clear_all()", "ctx.clear_all()  # unchanged")
    result = _replay(emptied, module)
    assert (result.status, result.error) == ("passed", None), render_text(result)


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        pytest.param('    keys = await ctx.state_keys()\n', '    keys = ["contents", "owner"]\n', "contents = await ctx.get(",
                     id="state-keys-dropped"),
        pytest.param('ctx.clear("contents")', 'ctx.clear("owner")', 'ctx.clear("owner")', id="other-key-cleared"),
        pytest.param("    ctx.clear_all()\n", "", 'carried = await ctx.generic_call(', id="clear-all-dropped"),
        pytest.param('ctx.generic_call("porter", "carry"', 'ctx.generic_call("porter", "haul"', 'ctx.generic_call("porter", "haul"',
                     id="other-handler-called"),
        pytest.param('ctx.object_send(store, key="spare"', 'ctx.object_send(store, key="attic"', 'key="attic"', id="sent-to-another-key"),
    ],
)  # fmt: skip
def test_each_changed_entry_diverges_at_its_line(emptied: Path, tmp_path: Path, old: str, new: str, line: str) -> None:
    module, path = _variant(tmp_path, old, new)
    result = _replay(emptied, module)
    assert result.status == "diverged", render_text(result)
    assert result.divergence is not None and result.divergence.source is not None, render_text(result)
    assert result.divergence.source.line == line_of(path, line), render_text(result)


def test_the_hand_over_replays_green_and_holds_its_entries(recorded: dict[str, Path], tmp_path: Path) -> None:
    history = recorded["handed"]
    entries = {entry["type"] for event in json.loads(history.read_text())["events"] for entry in event["journal"]}
    assert {"Command: CompleteAwakeable", "Command: OneWayCall", "Command: SendSignal"} <= entries, entries
    module, _ = _variant(tmp_path, "ctx.clear_all()", "ctx.clear_all()  # unchanged")
    result = _replay(history, module)
    assert (result.status, result.error) == ("passed", None), render_text(result)


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        pytest.param('"brass key")', '"iron key")', '"iron key")', id="awakeable-resolved-otherwise"),
        pytest.param('ctx.generic_send("porter", "carry"', 'ctx.generic_send("porter", "haul"', 'ctx.generic_send("porter", "haul"',
                     id="sent-to-another-handler"),
        pytest.param('    ctx.cancel_invocation(request["napping"])\n', "", None, id="cancel-dropped"),
    ],
)  # fmt: skip
def test_each_changed_hand_over_entry_diverges(recorded: dict[str, Path], tmp_path: Path, old: str, new: str, line: str | None) -> None:
    module, path = _variant(tmp_path, old, new)
    result = _replay(recorded["handed"], module)
    assert result.status == "diverged", render_text(result)
    if line is not None:
        assert result.divergence is not None and result.divergence.source is not None, render_text(result)
        assert result.divergence.source.line == line_of(path, line), render_text(result)


@pytest.mark.parametrize("role", ["turned", "delivery", "signed", "checked", "refused"])
def test_awakeable_rejection_workflow_send_and_promises_replay_green(recorded: dict[str, Path], tmp_path: Path, role: str) -> None:
    module, _ = _variant(tmp_path, "ctx.clear_all()", "ctx.clear_all()  # unchanged")
    result = _replay(recorded[role], module)
    assert (result.status, result.error) == ("passed", None), render_text(result)


@pytest.mark.parametrize(
    ("role", "old", "new", "line"),
    [
        pytest.param("turned", '"no key for you")', '"come back later")', '"come back later")', id="awakeable-rejected-otherwise"),
        pytest.param("turned", 'ctx.workflow_send(deliver, key=request["parcel"]', 'ctx.workflow_send(deliver, key="p-9"', 'key="p-9"',
                     id="sent-to-another-workflow"),
        pytest.param("signed", '    before = await ctx.promise("signature", type_hint=str).peek()\n', '    before = None\n',
                     'await ctx.promise("signature", type_hint=str).resolve(name)', id="peek-dropped"),
        pytest.param("signed", '.resolve(name)', '.resolve(name.upper())', ".resolve(name.upper())", id="promise-resolved-otherwise"),
        pytest.param("refused", ".reject(reason)", ".reject(reason.upper())", ".reject(reason.upper())", id="promise-rejected-otherwise"),
        pytest.param("checked", "ctx.workflow_call(status, key=request[\"parcel\"]", "ctx.workflow_call(status, key=\"p-9\"",
                     'key="p-9"', id="workflow-called-with-another-key"),
        pytest.param("checked", 'ctx.attach_invocation(request["delivery"]', 'ctx.attach_invocation(request["parcel"]',
                     'ctx.attach_invocation(request["parcel"]', id="attached-to-another-invocation"),
    ],
)  # fmt: skip
def test_each_changed_promise_or_awakeable_entry_diverges_at_its_line(
    recorded: dict[str, Path], tmp_path: Path, role: str, old: str, new: str, line: str
) -> None:
    module, path = _variant(tmp_path, old, new)
    result = _replay(recorded[role], module)
    assert result.status == "diverged", render_text(result)
    assert result.divergence is not None and result.divergence.source is not None, render_text(result)
    assert result.divergence.source.line == line_of(path, line), render_text(result)
