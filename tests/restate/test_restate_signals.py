"""Named signals and the durable clock, recorded on a real Restate server: a
guest's invocation reads ``ctx.time()`` and waits for a signal another invocation resolves
(``ctx.resolve_signal``) or rejects (``ctx.reject_signal``). Each recorded invocation replays green on
the code that recorded it; a changed signal, a dropped clock read and a clock read outside ``ctx.time()``
are divergences at their line."""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path
from types import ModuleType

import pytest
from restate_kit import HERE, call, import_histories, line_of, running_desk, send, wait_for_status

from replaytest.plugins.restate.replayer import RestateReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.report import render_text

pytestmark = [pytest.mark.slow]

SOURCE = HERE / "restate_frontdesk" / "frontdesk.py"
_counter = itertools.count()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The histories of a guest given a room, one refused, and the two concierge invocations that decided."""
    folder = tmp_path_factory.mktemp("restate-frontdesk")
    with running_desk(folder, app="restate_frontdesk.frontdesk:app", warmup=("concierge/ring", "warmup")) as desk:
        ann = send(desk.ingress, "guest/check_in", "ann")
        bob = send(desk.ingress, "guest/check_in", "bob")
        for waiting in (ann, bob):
            wait_for_status(desk.admin, waiting, "suspended")
        given, answer = call(desk.ingress, "concierge/give_room", {"invocation": ann, "room": "12"})
        assert answer == "given"
        refused, answer = call(desk.ingress, "concierge/refuse_room", {"invocation": bob})
        assert answer == "refused"
        for invocation in (ann, bob):
            wait_for_status(desk.admin, invocation, "completed")
        roles = {"ann": ann, "bob": bob, "given": given, "refused": refused}
        for invocation in roles.values():
            import_histories(desk.admin, folder / "histories", "--invocation", invocation)
    return {role: folder / "histories" / f"{invocation}.json" for role, invocation in roles.items()}


def _variant(folder: Path, old: str, new: str) -> tuple[ModuleType, Path]:
    source = SOURCE.read_text(encoding="utf-8")
    assert source.count(old) == 1, f"{old!r} occurs {source.count(old)} times"
    path = folder / f"frontdesk_variant_{next(_counter)}.py"
    path.write_text(source.replace(old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def _replay(history: Path, module: ModuleType) -> ReplayResult:
    return RestateReplayer().replay(history, WorkflowSet((module.app,)), ReplayOptions())


def test_the_histories_hold_the_clock_read_and_the_signal_entries(recorded: dict[str, Path]) -> None:
    ann = json.loads(recorded["ann"].read_text())
    assert ann["result"] == "ann in 12 (rang 12, arrived True)"
    assert [event["name"] for event in ann["events"]][0] == "timestamp"
    for role in ("given", "refused"):
        entries = [entry["type"] for event in json.loads(recorded[role].read_text())["events"] for entry in event["journal"]]
        assert "Command: SendSignal" in entries, entries
    assert json.loads(recorded["bob"].read_text())["result"] == "bob turned away: fully booked"


@pytest.mark.parametrize("role", ["ann", "bob", "given", "refused"])
def test_the_recording_code_replays_green(recorded: dict[str, Path], tmp_path: Path, role: str) -> None:
    module, _ = _variant(tmp_path, "    arrived = await ctx.time()\n", "    arrived = await ctx.time()  # unchanged\n")
    result = _replay(recorded[role], module)
    assert (result.status, result.error) == ("passed", None), render_text(result)


@pytest.mark.parametrize(
    ("role", "old", "new", "line"),
    [
        pytest.param("given", 'ctx.resolve_signal(request["invocation"], "room"', 'ctx.resolve_signal(request["invocation"], "suite"',
                     '"suite"', id="signal-resolved-under-another-name"),
        pytest.param("given", 'request["room"])', 'request["room"] + "b")', '+ "b")', id="signal-resolved-with-another-value"),
        pytest.param("refused", '"fully booked")', '"closed")', '"closed")', id="signal-rejected-otherwise"),
        pytest.param("ann", "    arrived = await ctx.time()\n", "    arrived = 1.0\n", "rang = await ctx.service_call(ring",
                     id="clock-read-dropped"),
    ],
)  # fmt: skip
def test_each_changed_signal_or_clock_entry_diverges_at_its_line(
    recorded: dict[str, Path], tmp_path: Path, role: str, old: str, new: str, line: str
) -> None:
    module, path = _variant(tmp_path, old, new)
    result = _replay(recorded[role], module)
    assert result.status == "diverged", render_text(result)
    assert result.divergence is not None and result.divergence.source is not None, render_text(result)
    assert result.divergence.source.line == line_of(path, line), render_text(result)


def test_a_clock_read_outside_ctx_time_is_named_beside_the_mismatch_restate_finds(recorded: dict[str, Path], tmp_path: Path) -> None:
    """Restate rejects the journal at the call now first (its recorded "timestamp" run is gone); the wall-clock
    read that replaced it is reported too, at its own line."""
    module, path = _variant(tmp_path, "    arrived = await ctx.time()\n", "    import time\n    arrived = time.time()\n")
    result = _replay(recorded["ann"], module)
    assert result.status == "diverged", render_text(result)
    assert result.divergence is not None and result.divergence.kind == "command-mismatch", render_text(result)
    assert [(hazard.kind, hazard.source.line if hazard.source else None) for hazard in result.hazards] == [
        ("nondeterministic-call", line_of(path, "arrived = time.time()"))
    ], render_text(result)


def test_a_renamed_awaited_signal_is_named_where_the_code_waits(recorded: dict[str, Path], tmp_path: Path) -> None:
    """The recorded signal is "room"; code waiting for "suite" would wait on Restate for a signal nobody sends."""
    module, path = _variant(tmp_path, 'await ctx.signal("room"', 'await ctx.signal("suite"')
    result = _replay(recorded["ann"], module)
    assert result.status == "diverged", render_text(result)
    assert result.divergence is not None and result.divergence.source is not None, render_text(result)
    assert result.divergence.source.line == line_of(path, 'await ctx.signal("suite"'), render_text(result)
    assert "waits for signal 'suite'" in result.divergence.message, render_text(result)


# ``ctx.scope`` needs the server's flow control, experimental in restate-server 1.7 and only on a new cluster.
FLOW_CONTROL = {"RESTATE_EXPERIMENTAL_ENABLE_PROTOCOL_V7": "true", "RESTATE_EXPERIMENTAL_ENABLE_VQUEUES": "true"}


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The history of a concierge call to ``ring`` made within the scope ``tenant-1``."""
    folder = tmp_path_factory.mktemp("restate-scoped")
    with running_desk(folder, app="restate_frontdesk.frontdesk:app", warmup=("concierge/ring", "warmup"),
                      server_env=FLOW_CONTROL) as desk:
        invocation, answer = call(desk.ingress, "concierge/ring_for_tenant", "tenant-1")
        assert answer == "rang the suite"
        import_histories(desk.admin, folder / "histories", "--invocation", invocation)
    return folder / "histories" / f"{invocation}.json"


def test_a_call_within_a_scope_replays_green(scoped: Path, tmp_path: Path) -> None:
    assert json.loads(scoped.read_text())["workflow"]["protocol_version"] == 7
    module, _ = _variant(tmp_path, "    arrived = await ctx.time()\n", "    arrived = await ctx.time()  # unchanged\n")
    result = _replay(scoped, module)
    assert (result.status, result.error) == ("passed", None), render_text(result)


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        pytest.param('ctx.scope(tenant).service_call(ring, arg="the suite")', 'ctx.scope(tenant).service_call(ring, arg="the attic")',
                     '"the attic"', id="scoped-call-with-another-argument"),
        pytest.param("ctx.scope(tenant).service_call(", 'ctx.scope(tenant + "-b").service_call(', '"-b"', id="another-scope"),
        pytest.param("ctx.scope(tenant).service_call(", "ctx.service_call(", 'ctx.service_call(ring, arg="the suite")', id="scope-dropped"),
    ],
)  # fmt: skip
def test_a_changed_scoped_call_diverges_at_its_line(scoped: Path, tmp_path: Path, old: str, new: str, line: str) -> None:
    module, path = _variant(tmp_path, old, new)
    result = _replay(scoped, module)
    assert result.status == "diverged", render_text(result)
    assert result.divergence is not None and result.divergence.source is not None, render_text(result)
    assert result.divergence.source.line == line_of(path, line), render_text(result)


def test_a_scope_added_to_code_an_unscoped_invocation_runs_is_a_divergence(recorded: dict[str, Path], tmp_path: Path) -> None:
    """The guest's invocation is pinned to protocol 6 (no flow control): Restate fails a call within a scope
    there and retries it until the code changes, so the change breaks it."""
    assert json.loads(recorded["ann"].read_text())["workflow"]["protocol_version"] == 6
    module, path = _variant(tmp_path, "rang = await ctx.service_call(ring, arg=room)", 'rang = await ctx.scope("vip").service_call(ring, arg=room)')
    result = _replay(recorded["ann"], module)
    assert result.status == "diverged", render_text(result)
    assert result.divergence is not None and result.divergence.source is not None, render_text(result)
    assert result.divergence.source.line == line_of(path, 'ctx.scope("vip")'), render_text(result)
    assert "pinned" in result.divergence.message, render_text(result)
