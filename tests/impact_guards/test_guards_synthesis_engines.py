"""Guard synthesis alone (no replay) for Temporal and DBOS workflow code, sync and async, on small source
files in a temporary git repository; patch ids that collide with one already in the file; and the notes
a group gets when there is no guard to write (LangGraph, a new file, a new function)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from replaytest.impact.guards import (
    DBOS_GUARD_NOTE,
    GuardSetupError,
    attach_guards,
    default_base,
    existing_patch_ids,
    patch_id_for,
    resolve_revision,
    workflow_slug,
)
from replaytest.impact.model import GroupKey, ImpactGroup, WorkflowImpact
from replaytest.replay.divergence import CommandView, ReplayResult, SourcePosition


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "service"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "dev@example.com"],
                 ["config", "user.name", "Dev"], ["add", "-A"], ["commit", "-q", "-m", "v1"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def _line_of(path: Path, text: str) -> int:
    [line] = [number for number, content in enumerate(path.read_text().splitlines(), 1) if text in content]
    return line


def _group(workflow_type: str, path: Path, line: int, function: str, issued: str | None, recorded: str,
           kind: str = "activity") -> ImpactGroup:
    issued_view = CommandView(kind, issued) if issued else None
    return ImpactGroup(
        key=GroupKey(workflow_type, "command-mismatch", (kind, issued or recorded), str(path), line),
        position=3, recorded=[CommandView(kind, recorded)], issued=issued_view,
        source=SourcePosition(str(path), line, function), message="the code issues another command here",
        finished=[ReplayResult(path.parent / "histories" / "h1.json", "x", workflow_type, workflow_id="order-1")],
    )


def _guard_for(root: Path, engine: str, group: ImpactGroup) -> ImpactGroup:
    impact = WorkflowImpact(group.key.workflow_type, engine, groups=[group])
    attach_guards([impact], [], root=root, base_rev=None, workflow_specs=[], verify=False)
    return group


SHIP_V1 = '''from datetime import timedelta

from temporalio import workflow as wf

with wf.unsafe.imports_passed_through():
    from shipping.activities import charge_card, reserve_stock, ship_parcel

TIMEOUT = timedelta(seconds=30)


@wf.defn
class ShipOrder:
    @wf.run
    async def run(self, order: dict) -> str:
        await wf.execute_activity(reserve_stock, order, start_to_close_timeout=TIMEOUT)
        # An earlier attempt at 3-D Secure was rolled back; its marker is retired here.
        wf.deprecate_patch("ship-order-charge-card-3ds")
        await wf.execute_activity(charge_card, order, start_to_close_timeout=TIMEOUT)
        return await wf.execute_activity(ship_parcel, order, start_to_close_timeout=TIMEOUT)


@wf.defn
class CancelOrder:
    @wf.run
    async def run(self, order: dict) -> str:
        return await wf.execute_activity(charge_card, order, start_to_close_timeout=TIMEOUT)
'''


def test_temporal_guard_uses_the_files_alias_and_avoids_an_id_already_in_the_file(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"ship.py": SHIP_V1})
    path = root / "ship.py"
    path.write_text(SHIP_V1.replace("(charge_card, order", "(charge_card_3ds, order", 1).replace(
        "import charge_card,", "import charge_card, charge_card_3ds,"))
    group = _guard_for(root, "temporal", _group("ShipOrder", path, _line_of(path, "charge_card_3ds, order"), "run",
                                                "charge_card_3ds", "charge_card"))
    guard = group.guard
    assert guard is not None, group.guard_note
    assert (guard.patch_id, guard.function) == ("ship-order-charge-card-3ds-2", "ShipOrder.run")
    assert (guard.new_range, guard.old_range) == ((18, 18), (18, 18))
    assert guard.diff == '''--- a/ship.py
+++ b/ship.py
@@ -15,7 +15,10 @@
         await wf.execute_activity(reserve_stock, order, start_to_close_timeout=TIMEOUT)
         # An earlier attempt at 3-D Secure was rolled back; its marker is retired here.
         wf.deprecate_patch("ship-order-charge-card-3ds")
-        await wf.execute_activity(charge_card_3ds, order, start_to_close_timeout=TIMEOUT)
+        if wf.patched("ship-order-charge-card-3ds-2"):
+            await wf.execute_activity(charge_card_3ds, order, start_to_close_timeout=TIMEOUT)
+        else:
+            await wf.execute_activity(charge_card, order, start_to_close_timeout=TIMEOUT)
         return await wf.execute_activity(ship_parcel, order, start_to_close_timeout=TIMEOUT)
 \n \n'''
    assert group.guard_note is None and guard.verification is None  # synthesis only: not verified


def test_temporal_names_the_function_by_its_qualified_name(tmp_path: Path) -> None:
    """Temporal's replayer reports ``ShipOrder.run``, not ``run``: the guard is still found, in that class."""
    root = _repo(tmp_path, {"ship.py": SHIP_V1})
    path = root / "ship.py"
    path.write_text(SHIP_V1.replace("(charge_card, order", "(charge_card_3ds, order", 1).replace(
        "import charge_card,", "import charge_card, charge_card_3ds,"))
    group = _guard_for(root, "temporal", _group("ShipOrder", path, _line_of(path, "charge_card_3ds, order"),
                                                "ShipOrder.run", "charge_card_3ds", "charge_card"))
    assert group.guard is not None, group.guard_note
    assert (group.guard.function, group.guard.new_range) == ("ShipOrder.run", (18, 18))


ONBOARD_V1 = '''from dbos import DBOS


@DBOS.step()
def create_account(email: str) -> str:
    return "acct-" + email.split("@")[0]


@DBOS.step()
def send_welcome(email: str) -> None:
    print("welcome", email)


@DBOS.step()
def record_signup(account: str) -> None:
    print("signup", account)


@DBOS.workflow()
def onboard_customer(email: str) -> str:
    account = create_account(email)
    send_welcome(email)
    record_signup(account)
    return account


@DBOS.step()
async def screen_sanctions(name: str) -> bool:
    return name != "blocked"


@DBOS.step()
async def open_wallet(name: str) -> str:
    return "wallet-" + name


@DBOS.workflow()
async def open_business_account(name: str) -> str:
    wallet = await open_wallet(name)
    return wallet
'''


def test_dbos_guards_for_a_removed_step_in_a_sync_workflow_and_an_inserted_one_in_an_async_one(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"onboarding.py": ONBOARD_V1})
    path = root / "onboarding.py"
    path.write_text(ONBOARD_V1.replace("    send_welcome(email)\n", "").replace(
        "    wallet = await open_wallet(name)\n", "    await screen_sanctions(name)\n    wallet = await open_wallet(name)\n"))

    removed = _guard_for(root, "dbos", _group("onboard_customer", path, _line_of(path, "record_signup(account)"),
                                              "onboard_customer", "record_signup", "send_welcome", kind="step"))
    assert removed.guard is not None, removed.guard_note
    assert removed.guard.patch_id == "onboard-customer-send-welcome"
    assert (removed.guard.new_range, removed.guard.old_range) == (None, (22, 22))
    assert '''    account = create_account(email)
    if not DBOS.patch("onboard-customer-send-welcome"):
        send_welcome(email)
    record_signup(account)
''' in removed.guard.guarded_text
    assert removed.guard_note == DBOS_GUARD_NOTE and "application_version" in DBOS_GUARD_NOTE

    inserted = _guard_for(root, "dbos", _group("open_business_account", path, _line_of(path, "    await screen_sanctions(name)"),
                                               "open_business_account", "screen_sanctions", "open_wallet", kind="step"))
    assert inserted.guard is not None, inserted.guard_note
    assert '''async def open_business_account(name: str) -> str:
    if await DBOS.patch_async("open-business-account-screen-sanctions"):
        await screen_sanctions(name)
    wallet = await open_wallet(name)
''' in inserted.guard.guarded_text


def test_groups_without_a_guard_say_why(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"orders.py": "def old_flow(ctx):\n    ctx.step('a', print)\n"})
    (root / "orders.py").write_text("def old_flow(ctx):\n    ctx.step('a', print)\n\n\ndef new_flow(ctx):\n    ctx.step('b', print)\n")
    (root / "returns.py").write_text("def returns_flow(ctx):\n    ctx.step('label', print)\n")
    new_function = _guard_for(root, "journal", _group("new_flow", root / "orders.py", 6, "new_flow", "b", "c", "step"))
    new_file = _guard_for(root, "journal", _group("returns_flow", root / "returns.py", 2, "returns_flow", "label", "x"))
    unchanged = _guard_for(root, "journal", _group("old_flow", root / "orders.py", 2, "old_flow", "a", "z", "step"))
    assert new_function.guard is None and new_file.guard is None and unchanged.guard is None
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout[:12]
    assert new_function.guard_note == f"new_flow (orders.py:6) is new since {head}: there is no old code to keep recorded runs on"
    assert new_file.guard_note == f"returns.py did not exist at {head}: there is no old code to keep recorded runs on"
    assert unchanged.guard_note == (
        f"old_flow is the same as at {head}: the change these runs break at is outside it (code it calls, "
        "configuration, or a dependency), so replaytest cannot write its guard")


def test_langgraph_gets_the_engines_guidance_and_the_threads_that_need_it(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"graph.py": "x = 1\n"})
    group = _group("triage", root / "graph.py", 1, "triage", "classify", "route", "task")
    group.in_flight.append(ReplayResult(root / "h2.json", "langgraph", "triage", workflow_id="thread-7"))
    impact = WorkflowImpact("triage", "langgraph", groups=[group])
    attach_guards([impact], [], root=root, base_rev="HEAD", workflow_specs=[], verify=False)
    assert group.guard is None
    assert impact.guidance == group.guard_note == (
        "LangGraph's functional API has no patch marker: stamp a version into the thread's input (or state) when a "
        "thread starts, and branch on it in the entrypoint, so threads started before the change keep the old "
        "path; in-flight threads that need it: thread-7; finished threads (for forks and replays from a "
        "checkpoint): order-1")


def test_patch_ids_are_stable_and_unique() -> None:
    text = 'if ctx.patched("claims-pay"):\n    pass\nDBOS.patch(\'claims-pay-2\')\nawait DBOS.patch_async("x")\n'
    assert existing_patch_ids(text) == {"claims-pay", "claims-pay-2", "x"}
    names = ["idempotency_key", "Pay Employee", "file claim"]
    assert patch_id_for("claims", names, {"Pay Employee"}, set()) == "claims-pay-employee"
    assert patch_id_for("claims", names, {"Pay Employee"}, set()) == "claims-pay-employee"
    assert patch_id_for("claims", ["pay"], set(), existing_patch_ids(text)) == "claims-pay-3"
    assert patch_id_for("Ship Order!", [], set(), set()) == "ship-order-change"


def test_patch_ids_name_the_workflow_and_the_step_never_the_engine_call() -> None:
    assert workflow_slug("OrderWorkflow") == "order"
    assert workflow_slug("InvoiceDispute") == "invoice-dispute"
    assert workflow_slug("resolve_dispute") == "resolve-dispute"
    assert workflow_slug("HTTPOrderWorkflow") == "http-order"
    assert workflow_slug("workflow") == "workflow"
    # Temporal: the activity handed to execute_activity; the engine call itself names nothing.
    assert patch_id_for("OrderWorkflow", ["execute_activity", "fraud_check"], {"fraud_check"}, set()) == "order-fraud-check"
    # A timer is a timer, not the API call that starts it nor the timedelta inside it.
    assert patch_id_for("OrderWorkflow", ["sleep", "timedelta"], {"timer"}, set()) == "order-timer"
    # DBOS: a step called directly, after a recv the change did not touch.
    assert patch_id_for("resolve_dispute", ["recv", "record_audit"], set(), set()) == "resolve-dispute-record-audit"


def test_the_base_is_the_merge_base_with_the_default_branch_and_a_missing_one_is_an_error(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"orders.py": "def flow(ctx):\n    ctx.step('a', print)\n"})

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()

    fork_point = git("rev-parse", "HEAD")
    assert default_base(root) == fork_point  # on main itself: HEAD
    git("checkout", "-q", "-b", "feature")
    (root / "orders.py").write_text("def flow(ctx):\n    ctx.step('b', print)\n")
    git("commit", "-q", "-am", "feature work")
    git("checkout", "-q", "main")
    (root / "notes.txt").write_text("later on main\n")
    git("add", "-A")
    git("commit", "-q", "-m", "main moves on")
    git("checkout", "-q", "feature")
    assert default_base(root) == fork_point

    with pytest.raises(GuardSetupError, match="--base v9: no such revision"):
        resolve_revision(root, "v9")
    git("branch", "-q", "-m", "main", "trunk")
    with pytest.raises(GuardSetupError, match="no default branch .*pass --base REV"):
        default_base(root)
    outside = tmp_path / "no-repo"
    outside.mkdir()
    with pytest.raises(GuardSetupError, match="is not in a git repository"):
        default_base(outside)


def test_groups_of_one_change_share_one_guard_and_one_id(tmp_path: Path) -> None:
    """Two activities inserted together break finished runs at the first and in-flight runs at the second
    line: one changed block, so one guard, one id (no ``-2``), one edit."""
    root = _repo(tmp_path, {"ship.py": SHIP_V1})
    path = root / "ship.py"
    charge = "        await wf.execute_activity(charge_card, order, start_to_close_timeout=TIMEOUT)\n"
    path.write_text(SHIP_V1.replace(charge, "        await wf.execute_activity(fraud_check, order, start_to_close_timeout=TIMEOUT)\n"
                                    "        await wf.execute_activity(notify_risk, order, start_to_close_timeout=TIMEOUT)\n"
                                    + charge, 1))
    first = _group("ShipOrder", path, _line_of(path, "(fraud_check,"), "ShipOrder.run", "fraud_check", "charge_card")
    second = _group("ShipOrder", path, _line_of(path, "(notify_risk,"), "ShipOrder.run", "notify_risk", "charge_card")
    impact = WorkflowImpact("ShipOrder", "temporal", groups=[first, second])
    attach_guards([impact], [], root=root, base_rev=None, workflow_specs=[], verify=False)
    assert first.guard is not None and first.guard is second.guard
    assert first.guard.patch_id == "ship-order-fraud-check"
    assert first.guard.guarded_text.count("wf.patched(") == 1
    # Wider guards of the same change are kept in reserve: the span is this block already, so only the body.
    assert [guard.new_range for guard in first.wider_guards] == [(15, 21)]
