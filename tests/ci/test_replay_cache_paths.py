"""A cached green verdict holds only while the workflow's code comes from the same files (``replay.cache``,
the entry's ``closure``): a user keeps two versions of an order agent in ``v0/`` and ``v2/`` and chooses
one with ``PYTHONPATH``. Switching it leaves every file of the first run unchanged, yet the spec now
imports other code: ``replaytest check`` must replay and fail exactly as ``--no-cache`` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from replaytest.history import save_history
from replaytest.journal import Journal, Worker

# The order agent as first deployed: reserve the stock, then charge the card.
AGENT_V0 = '''\
from typing import Any

from replaytest.journal import workflow

from policy import needs_review


def reserve(sku: str, quantity: int) -> str:
    return f"hold-{sku}-{quantity}"


def charge(customer: str, amount: float, idempotency_key: str) -> str:
    return f"ch-{customer}"


def review(order_id: str) -> bool:
    return True


@workflow(name="order_agent", version="1")
def order_agent(ctx: Any, order: dict[str, Any]) -> str:
    hold = ctx.step("reserve", reserve, order["sku"], order["quantity"])
    if needs_review(order["amount"]):
        ctx.step("review", review, order["id"])
    ctx.step("charge", charge, order["customer"], order["amount"], idempotency_key=ctx.idempotency_key())
    return hold
'''
# The second version charges before it reserves: a recorded v0 run does not replay under it.
AGENT_V2 = AGENT_V0.replace(
    '''    hold = ctx.step("reserve", reserve, order["sku"], order["quantity"])
    if needs_review(order["amount"]):
        ctx.step("review", review, order["id"])
    ctx.step("charge", charge, order["customer"], order["amount"], idempotency_key=ctx.idempotency_key())
''',
    '''    ctx.step("charge", charge, order["customer"], order["amount"], idempotency_key=ctx.idempotency_key())
    hold = ctx.step("reserve", reserve, order["sku"], order["quantity"])
''',
)
# Orders above the limit are reviewed by a person first; v2 lowered the limit.
POLICY_V0 = "def needs_review(amount: float) -> bool:\n    return amount > 500\n"
POLICY_V2 = "def needs_review(amount: float) -> bool:\n    return amount > 50\n"
ORDER = {"id": "O-12", "customer": "ada@example.com", "sku": "KETTLE", "quantity": 1, "amount": 80.0}


def _record(project: Path) -> None:
    """One order run under v0 (imported the way PYTHONPATH=v0 imports it), saved as a history."""
    sys.path.insert(0, str(project / "v0"))
    try:
        import jagent  # type: ignore[import-not-found]

        with Journal(project / "journal.sqlite3") as journal:
            Worker(journal, [jagent.order_agent]).run_until_idle()
            journal.start(jagent.order_agent, ORDER, run_id="order-O-12", workflow_id="O-12")
            Worker(journal, [jagent.order_agent]).run_until_idle()
            save_history(journal.export("order-O-12"), project / "histories" / "order-O-12.json")
    finally:
        sys.path.remove(str(project / "v0"))
        for name in ("jagent", "policy"):
            sys.modules.pop(name, None)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for folder, agent, policy in (("v0", AGENT_V0, POLICY_V0), ("v2", AGENT_V2, POLICY_V2)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "jagent.py").write_text(agent, encoding="utf-8")
        (tmp_path / folder / "policy.py").write_text(policy, encoding="utf-8")
    _record(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["jagent:order_agent"]\n', encoding="utf-8"
    )
    return tmp_path


def _check(project: Path, pythonpath: str, *args: str) -> tuple[int, dict[str, tuple[str, str | None]], int]:
    """``PYTHONPATH=<pythonpath> replaytest check v0``: exit code, each history's outcome, skipped count."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(project / part) for part in pythonpath.split(":"))}
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "check", "--format", "json", *args, "v0"],
        cwd=project, capture_output=True, text=True, timeout=180, env=env,
    )
    assert run.returncode in (0, 1), run.stdout + run.stderr
    replay: dict[str, Any] = json.loads(run.stdout)["replay"]
    outcomes = {
        Path(r["history"]).stem: (r["status"], (r.get("divergence") or {}).get("kind")) for r in replay["results"]
    }
    return run.returncode, outcomes, replay["skipped"]


@pytest.mark.slow
def test_the_same_spec_imported_from_another_folder_replays_and_fails_like_no_cache(project: Path) -> None:
    assert _check(project, "v0") == (0, {"order-O-12": ("passed", None)}, 0)
    assert _check(project, "v0") == (0, {}, 1), "an unchanged project must still be skipped"

    expected = (1, {"order-O-12": ("diverged", "command-mismatch")}, 0)
    assert _check(project, "v2") == expected
    assert _check(project, "v2", "--no-cache") == expected
    # Back on v0 the first entry holds again: its files and closure are as they were.
    assert _check(project, "v0") == (0, {}, 1)


@pytest.mark.slow
def test_a_helper_module_shadowed_earlier_on_the_path_is_a_miss(project: Path) -> None:
    """The agent still comes from v0/jagent.py, unchanged, but ``import policy`` now finds v2/policy.py
    first on ``sys.path``: its lower limit sends the order to review, a step the recorded run never took."""
    assert _check(project, "v0") == (0, {"order-O-12": ("passed", None)}, 0)
    (project / "v2" / "jagent.py").unlink()  # only v2's policy is left there to shadow v0's

    expected = (1, {"order-O-12": ("diverged", "command-mismatch")}, 0)
    assert _check(project, "v2:v0") == expected
    assert _check(project, "v2:v0", "--no-cache") == expected
