"""Restate code named the way users serve it: ``replay_workflows`` naming the ASGI app ``restate.app(...)``
returns, an ``Endpoint``, a module (every service in it) or a list of those replays the recorded invocations
as naming the services does, diverges the same for changed code, and anything else is refused naming what
was found. And the invocation's seeded random (``ctx.random()``, ``ctx.uuid()``) replays as recorded."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import restate
from restate.endpoint import Endpoint
from restate_kit import HERE, Recording, line_of
from restate_shop import orders

from replaytest.plugins.restate.replayer import UNSEEDED_RANDOM_NOTE, RestateReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.runner import load_workflows

_TIMEOUT = 120
ROLES = ("completed", "approved", "suspended", "failed", "signed up", "waiting signup")


def _replay(path: Path, workflows: WorkflowSet) -> ReplayResult:
    return RestateReplayer().replay(path, workflows, ReplayOptions())


def _endpoint(*services: object) -> Endpoint:
    endpoint = Endpoint()
    endpoint.bind(*services)
    return endpoint


SERVED = {
    "the ASGI app": lambda: WorkflowSet((orders.app,), ("restate_shop.orders:app",)),
    "an endpoint": lambda: WorkflowSet((_endpoint(orders.orders, orders.ledger, orders.pricing, orders.signup),), ("e",)),
    "the module": lambda: load_workflows(["restate_shop.orders"], HERE),
    "a list": lambda: WorkflowSet(([orders.orders, orders.signup],), ("restate_shop.orders:services",)),
}


@pytest.mark.parametrize("served", sorted(SERVED))
def test_what_users_serve_replays_the_recorded_invocations_green(recording: Recording, served: str) -> None:
    workflows = SERVED[served]()
    for role in ROLES:
        result = _replay(recording.histories / f"{recording.ids[role]}.json", workflows)
        assert (result.status, result.error, result.divergence) == ("passed", None, None), (role, result.error)


@pytest.mark.parametrize("served", ["app", "module"])
def test_a_renamed_step_diverges_at_its_line_when_the_app_or_module_is_named(
    recording: Recording, variant, served: str  # type: ignore[no-untyped-def]
) -> None:
    module, path = variant('ctx.run_typed("charge"', 'ctx.run_typed("bill"')
    workflows = WorkflowSet((module.app if served == "app" else module,), (f"{module.__name__}:app",))
    divergence = _replay(recording.histories / f"{recording.ids['completed']}.json", workflows).divergence
    assert divergence is not None and divergence.kind == "command-mismatch"
    assert (divergence.recorded.name, divergence.issued.name) == ("charge", "bill")  # type: ignore[union-attr]
    assert divergence.source is not None and divergence.source.line == line_of(path, '"bill"')


def test_the_app_made_by_an_endpoint_serves_its_services(recording: Recording) -> None:
    app = _endpoint(orders.orders, orders.ledger, orders.pricing).app()
    result = _replay(recording.histories / f"{recording.ids['completed']}.json", WorkflowSet((app,), ("x:app",)))
    assert (result.status, result.error) == ("passed", None)


def test_an_app_without_the_handler_makes_the_history_stale_naming_what_it_serves(recording: Recording) -> None:
    app = restate.app(services=[orders.ledger])
    result = _replay(recording.histories / f"{recording.ids['completed']}.json", WorkflowSet((app,), ("x:app",)))
    assert result.status == "stale" and "orders/place" in str(result.error) and "known: ledger/add" in str(result.error)


@pytest.mark.parametrize(
    ("obj", "origin", "found"),
    [
        (orders.reserve_stock, "restate_shop.orders:reserve_stock", "function reserve_stock, not an app restate.app(...) made"),
        (json, "json", "module 'json', holding no Restate service"),
        ("orders", "cfg:name", "a builtins.str"),
        ([orders.orders, 3], "cfg:services", "a list of Service, int"),
    ],
)
def test_anything_else_is_refused_naming_what_was_found(recording: Recording, obj: object, origin: str, found: str) -> None:
    result = _replay(recording.histories / f"{recording.ids['completed']}.json", WorkflowSet((obj,), (origin,)))
    assert result.status == "error", result
    assert f"replay_workflows names {origin!r} ({found}" in str(result.error)
    assert "restate.app(services=[...])" in str(result.error)


def test_the_cli_takes_a_module_name_and_the_app(recording: Recording) -> None:
    for specs in (["restate_shop.orders"], ["restate_shop.orders:app"]):
        completed = subprocess.run(
            [sys.executable, "-m", "replaytest", "replay", str(recording.histories), *(f"--workflows={spec}" for spec in specs)],
            cwd=HERE, capture_output=True, text=True, timeout=_TIMEOUT,
        )
        assert completed.returncode == 0, completed.stdout + completed.stderr
        assert " 0 diverged, 0 stale" in completed.stdout + completed.stderr, completed.stdout


def test_the_cli_refuses_a_spec_that_serves_nothing(recording: Recording) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", str(recording.histories), "--workflows", "restate_shop.orders:reserve_stock"],
        cwd=HERE, capture_output=True, text=True, timeout=_TIMEOUT,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 2, output
    assert "'restate_shop.orders:reserve_stock' (function reserve_stock" in output


def _draws(folder: Path | None) -> list[Path]:
    assert folder is not None
    paths = sorted(folder.glob("*.json"))
    assert len(paths) == 4, paths
    return paths


def test_the_seeded_random_replays_the_recorded_values(recording: Recording) -> None:
    recorded = [json.loads(path.read_text()) for path in _draws(recording.draws)]
    # The step names hold the random values: each draw recorded its own, on both branches.
    names = [[event["name"] for event in document["events"]] for document in recorded]
    assert all(name[0].startswith("ticket ") and name[1].split()[0] in ("odd", "even") for name in names)
    assert len({name[0] for name in names}) == 4  # four draws, four tickets
    for path, document in zip(_draws(recording.draws), recorded):
        result = _replay(path, WorkflowSet((orders.app,), ("restate_shop.orders:app",)))
        assert (result.status, result.error, result.divergence) == ("passed", None, None), (path, result.error, result.divergence)
        assert document["result"]["number"] == int(document["events"][1]["name"].split()[-1])


def test_code_that_draws_one_more_random_value_diverges_at_the_step_named_by_it(recording: Recording, variant) -> None:  # type: ignore[no-untyped-def]
    draw = "    number = ctx.random().randint(1, 1_000_000)\n"
    module, path = variant(draw, "    ctx.random().random()\n" + draw)
    for recorded in _draws(recording.draws):
        divergence = _replay(recorded, WorkflowSet((module.lottery,), ("v:lottery",))).divergence
        assert divergence is not None and divergence.kind == "command-mismatch", recorded
        assert divergence.recorded is not None and divergence.issued is not None
        assert divergence.recorded.name.startswith("ticket ") and divergence.issued.name.startswith("ticket ")
        assert divergence.recorded.name != divergence.issued.name
        assert divergence.source is not None and divergence.source.line == line_of(path, 'f"ticket {ticket}"')


def test_a_history_whose_id_is_no_invocation_id_says_its_random_values_are_not_compared(recording: Recording, tmp_path: Path) -> None:
    document = json.loads(_draws(recording.draws)[0].read_text())
    document["workflow"]["id"] = "draw-by-hand"
    path = tmp_path / "by-hand.json"
    path.write_text(json.dumps(document))
    result = _replay(path, WorkflowSet((orders.lottery,), ("x:lottery",)))
    assert UNSEEDED_RANDOM_NOTE in result.notes
    # The recorded draws, seeded from their invocation ids, carry no such note.
    assert UNSEEDED_RANDOM_NOTE not in _replay(_draws(recording.draws)[0], WorkflowSet((orders.lottery,), ("x:lottery",))).notes


def test_a_configured_module_name_replays_and_a_malformed_name_is_refused(recording: Recording, tmp_path: Path) -> None:
    shutil.copytree(HERE / "restate_shop", tmp_path / "restate_shop", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(recording.histories, tmp_path / "histories")
    for workflows, code in (('["restate_shop.orders"]', 0), ('["restate_shop/orders.py"]', 2)):
        (tmp_path / "pyproject.toml").write_text(f'[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = {workflows}\n')
        completed = subprocess.run(
            [sys.executable, "-m", "replaytest", "replay"], cwd=tmp_path, capture_output=True, text=True, timeout=_TIMEOUT
        )
        output = completed.stdout + completed.stderr
        assert completed.returncode == code, output
    assert "'restate_shop/orders.py' must be module:attribute or a module name" in output


def test_check_takes_the_app_and_a_module_name_and_its_cache_sees_the_code_change(recording: Recording, tmp_path: Path) -> None:
    """The incremental cache keys a verdict on the code the app or module name reaches: a second run skips
    the green histories, an edit of the served module replays them again (and the renamed step diverges)."""

    def check(folder: Path) -> tuple[int, str]:
        completed = subprocess.run(
            [sys.executable, "-m", "replaytest", "check", "restate_shop", "-q"], cwd=folder, capture_output=True, text=True, timeout=_TIMEOUT
        )
        return completed.returncode, completed.stdout + completed.stderr

    for number, workflows in enumerate(('["restate_shop.orders"]', '["restate_shop.orders:app"]')):
        folder = tmp_path / f"project-{number}"
        shutil.copytree(HERE / "restate_shop", folder / "restate_shop", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(recording.histories, folder / "histories")
        (folder / "pyproject.toml").write_text(f'[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = {workflows}\n')
        code, output = check(folder)
        assert code == 0 and "replayed 11 histories: 11 passed" in output, output
        code, output = check(folder)
        assert code == 0 and "skipped 11 histories that replayed green before" in output, output
        served = folder / "restate_shop" / "orders.py"
        served.write_text(served.read_text().replace('ctx.run_typed("charge"', 'ctx.run_typed("bill"'))
        code, output = check(folder)
        assert code == 1 and "3 diverged" in output, output
