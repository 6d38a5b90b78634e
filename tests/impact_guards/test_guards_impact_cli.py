"""``replaytest impact --base/--diff/--fix`` on the expense-claim project: the verified guard printed as a
patch, written by --fix (after which impact finds nothing to break), and the errors that exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from guardkit import ClaimsRepo, make_repo
from test_guards_journal_claims import INSERTED_AFTER_WAIT, _version_2

GUARD_DIFF = '''--- a/expenses/claims.py
+++ b/expenses/claims.py
@@ -44,7 +44,8 @@
     receipt = ctx.step("read receipt", read_receipt, claim["receipt"])
     decision = ctx.wait_signal("manager decision", timeout=7 * 86400)
     # Finance asked for a budget check on every claim before it is paid or rejected.
-    ctx.step("check budget", check_budget, claim["employee"], receipt["total"])
+    if ctx.patched("expense-claim-check-budget"):
+        ctx.step("check budget", check_budget, claim["employee"], receipt["total"])
     if decision and decision.get("approved"):
         outcome = "paid"
         ctx.step("pay employee", pay_employee, employee["iban"], receipt["total"], idempotency_key=ctx.idempotency_key())
'''


def _impact(repo: ClaimsRepo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "replaytest", "impact", "--quiet", *args], cwd=repo.root,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(repo.root), "PATH": "/usr/bin:/bin"})


def test_diff_prints_the_verified_guard_and_fix_writes_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    version_2 = _version_2(repo, INSERTED_AFTER_WAIT)

    shown = _impact(repo, "--diff")
    assert (shown.returncode, shown.stdout) == (1, GUARD_DIFF), shown.stderr
    assert repo.module_path.read_text() == version_2, "--diff writes nothing"

    report = json.loads(_impact(repo, "--output-format", "json").stdout)
    [workflow] = report["workflows"]
    [group] = workflow["groups"]
    assert group["guard"]["patch_id"] == "expense-claim-check-budget"
    assert (group["guard"]["verified"]["histories"], group["guard"]["verified"]["passed"]) == (4, 4)
    assert group["guard"]["diff"] == GUARD_DIFF

    fixed = _impact(repo, "--fix")
    assert fixed.returncode == 1, fixed.stderr  # the report is of the code before the fix
    assert f"applied 1 verified guard: {Path('expenses/claims.py')}" in fixed.stdout
    assert repo.module_path.read_text() == version_2.replace(INSERTED_AFTER_WAIT.new, INSERTED_AFTER_WAIT.guarded)
    again = _impact(repo, "--output-format", "json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["workflows"][0]["groups"] == []
    nothing = _impact(repo, "--diff")
    assert (nothing.returncode, nothing.stdout) == (0, "") and "no verified guard to print" in nothing.stderr


def test_a_missing_base_or_both_diff_and_fix_exit_2(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    version_2 = _version_2(repo, INSERTED_AFTER_WAIT)
    unknown = _impact(repo, "--base", "release-0.9", "--diff")
    assert unknown.returncode == 2 and "--base release-0.9: no such revision" in unknown.stderr
    both = _impact(repo, "--diff", "--fix")
    assert both.returncode == 2 and "--diff and --fix" in both.stderr
    assert repo.module_path.read_text() == version_2
