"""Kit for the guard tests: an expense-claim agent on the journal runtime in a temporary git repository
(version 1 committed on ``main``), histories recorded from it by the real runtime (two runs parked at the
manager's decision, one paid, one rejected), edits that make version 2, replaying the histories in
process, and grouping the divergences into ``ImpactGroup``s the way the report groups them."""

from __future__ import annotations

import importlib.util
import itertools
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replaytest.history import save_history
from replaytest.impact.model import GroupKey, ImpactGroup, WorkflowImpact
from replaytest.journal import Journal, Worker
from replaytest.plugins.journal import PLUGIN
from replaytest.replay.adapter import ReplayOptions
from replaytest.replay.batch import replay_many
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.runner import load_workflows

MODULE = "expenses/claims.py"
SPEC = "expenses.claims:expense_claim"

CLAIMS_V1 = '''\
"""An expense-claim agent on the journal runtime: look up the employee, read the receipt, wait for the
manager's decision, pay the claim or explain the rejection, and file it."""

from __future__ import annotations

from typing import Any

from replaytest.journal import workflow

PAYMENTS: dict[str, dict[str, Any]] = {}
LETTERS: list[dict[str, Any]] = []


def lookup_employee(email: str) -> dict[str, Any]:
    return {"email": email, "iban": "DE44" + str(sum(map(ord, email))).zfill(8)}


def read_receipt(image: str) -> dict[str, Any]:
    merchant, _, total = image.rpartition("-")
    return {"merchant": merchant, "total": float(total)}


def pay_employee(iban: str, amount: float, idempotency_key: str) -> dict[str, Any]:
    # The key makes a resumed payment a no-op: same key, same transfer.
    return PAYMENTS.setdefault(idempotency_key, {"iban": iban, "amount": amount})


def write_letter(to: str, text: str, idempotency_key: str) -> dict[str, Any]:
    LETTERS.append({"to": to, "text": text, "key": idempotency_key})
    return {"sent": True}


def file_claim(claim_id: str, outcome: str) -> dict[str, Any]:
    return {"filed": claim_id, "outcome": outcome}


@workflow(name="expense_claim")
def expense_claim(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    employee = ctx.step("look up employee", lookup_employee, claim["employee"])
    receipt = ctx.step("read receipt", read_receipt, claim["receipt"])
    decision = ctx.wait_signal("manager decision", timeout=7 * 86400)
    if decision and decision.get("approved"):
        outcome = "paid"
        ctx.step("pay employee", pay_employee, employee["iban"], receipt["total"], idempotency_key=ctx.idempotency_key())
    else:
        outcome = "rejected"
        ctx.step("explain rejection", write_letter, employee["email"], "Your claim was not approved.",
                 idempotency_key=ctx.idempotency_key())
    ctx.step("file claim", file_claim, claim["id"], outcome)
    return {"claim": claim["id"], "outcome": outcome}
'''

CLAIMS = {
    "parked-taxi": {"id": "C-1", "employee": "ana@example.com", "receipt": "taxi-23.5"},
    "parked-hotel": {"id": "C-2", "employee": "ben@example.com", "receipt": "hotel-189.0"},
    "paid": {"id": "C-3", "employee": "cho@example.com", "receipt": "train-64.2"},
    "rejected": {"id": "C-4", "employee": "dan@example.com", "receipt": "casino-500.0"},
}
DECISIONS = {"paid": {"approved": True, "by": "lea@example.com"}, "rejected": {"approved": False, "by": "lea@example.com"}}

_names = itertools.count()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def load_module(path: Path) -> Any:
    """Import ``path`` under a fresh module name (each version of the app is a different module)."""
    spec = importlib.util.spec_from_file_location(f"expense_claims_v{next(_names)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class ClaimsRepo:
    root: Path
    histories: dict[str, Path]

    @property
    def module_path(self) -> Path:
        return self.root / MODULE

    def edit(self, old: str, new: str) -> None:
        """Version 2: replace ``old`` (which must occur once) with ``new`` in the working tree."""
        text = self.module_path.read_text()
        assert text.count(old) == 1, old
        self.module_path.write_text(text.replace(old, new))

    def replay_all(self) -> list[ReplayResult]:
        """Every history replayed in process against the current file."""
        workflow = load_module(self.module_path).expense_claim
        assert PLUGIN.replayer is not None
        return replay_many(sorted(self.histories.values()), [PLUGIN.replayer], load_workflows((), None, [workflow]),
                           ReplayOptions())


def make_repo(tmp_path: Path) -> ClaimsRepo:
    root = tmp_path / "claims-service"
    (root / "expenses").mkdir(parents=True)
    (root / "expenses" / "__init__.py").write_text("")
    (root / MODULE).write_text(CLAIMS_V1)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "claims-service"\nversion = "1.0"\n\n[tool.replaytest.replay]\n'
        f'paths = ["histories"]\nworkflows = ["{SPEC}"]\n'
    )
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "Dev")
    histories = record(load_module(root / MODULE).expense_claim, root / "histories", tmp_path / "journal.sqlite3")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "claims v1")
    return ClaimsRepo(root, histories)


def record(workflow: Any, folder: Path, database: Path) -> dict[str, Path]:
    """Run the four claims on a real journal: two stay parked at the manager's decision, two get one."""
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    with Journal(database, clock=lambda: 1_780_000_000.0) as journal:
        worker = Worker(journal, [workflow], heartbeat=False)
        for name, claim in CLAIMS.items():
            journal.start(workflow, claim, run_id=f"run-{name}", workflow_id=f"claim-{name}")
        worker.run_until_idle()
        for name, decision in DECISIONS.items():
            journal.signal(f"run-{name}", "manager decision", decision)
        worker.run_until_idle()
        for name in CLAIMS:
            written[name] = folder / f"expense_claim-{name}.json"
            save_history(journal.export(f"run-{name}"), written[name])
    return written


def run_fresh(module_path: Path, database: Path, claim: dict[str, Any], decision: dict[str, Any] | None) -> Any:
    """A new run of the code in ``module_path`` (a claim after the deploy), returned as its history."""
    workflow = load_module(module_path).expense_claim
    with Journal(database, clock=lambda: 1_790_000_000.0) as journal:
        worker = Worker(journal, [workflow], heartbeat=False)
        journal.start(workflow, claim, run_id="run-fresh", workflow_id="claim-fresh")
        worker.run_until_idle()
        if decision is not None:
            journal.signal("run-fresh", "manager decision", decision)
            worker.run_until_idle()
        return journal.export("run-fresh")


def impacts_of(results: list[ReplayResult]) -> list[WorkflowImpact]:
    """The diverged runs grouped by (kind, command the code issues or the recorded one, source line), in
    order of first appearance, with each distinct recorded command (kind and name) once; in-flight runs that replay green are "not reached"."""
    impact = WorkflowImpact(workflow_type="expense_claim", engine="journal")
    groups: dict[GroupKey, ImpactGroup] = {}
    for result in results:
        divergence = result.divergence
        if result.status == "passed":
            if result.in_flight:
                impact.not_reached.append(result)
            continue
        assert divergence is not None, result
        command = divergence.issued or divergence.recorded
        source = divergence.source
        key = GroupKey(result.workflow_type, divergence.kind, (command.kind, command.name) if command else None,
                       source.path if source else None, source.line if source else None)
        group = groups.get(key)
        if group is None:
            group = groups[key] = ImpactGroup(key, divergence.position, [], divergence.issued, source, divergence.message)
            impact.groups.append(group)
        recorded = divergence.recorded
        if all((seen.kind, seen.name) != (recorded.kind, recorded.name) for seen in group.recorded if seen and recorded):
            group.recorded.append(divergence.recorded)
        (group.in_flight if result.in_flight else group.finished).append(result)
    return [impact]


def run_ids(results: list[ReplayResult]) -> list[str]:
    return sorted(str(r.workflow_id) for r in results)
