"""What a cached green verdict is keyed on besides the history and the code closure (``replay.cache``):
files the workflow's module reads when it is imported (a prompt template kept in a text file), files
its code reads while a history replays (a policy limit), the prompt manifest, library versions and every
``ReplayOptions`` field. Each change must make ``replaytest check`` replay the history and report
exactly what ``--no-cache`` reports; an unchanged project must still be skipped."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from replaytest.history import save_history
from replaytest.journal import Journal, Worker

# A returns desk: the claim assessment prompt lives in prompts/assess.txt (edited by the support team,
# loaded when the module is imported); the amount above which a manager must approve lives in
# refund_limit.txt and is read by the workflow each time it runs.
RETURNS_DESK = '''\
import os
from pathlib import Path
from typing import Any

from replaytest.journal import Prompt, workflow

HERE = Path(__file__).parent
# Each deployment signs its assessments (an environment variable no file digest can see).
ASSESS = Prompt("assess", (HERE / "prompts" / "assess.txt").read_text(encoding="utf-8") + os.environ.get("DESK_SIGNATURE", ""))


def approval_limit() -> float:
    return float((HERE / "refund_limit.txt").read_text(encoding="utf-8"))


def assess_claim(prompt_text: str) -> str:
    return "refund" if "cracked" in prompt_text else "explain"


def issue_refund(order_id: str, amount: float, idempotency_key: str) -> str:
    return f"R-{order_id}"


def send_reply(customer: str, text: str, idempotency_key: str) -> bool:
    return True


@workflow(name="returns_desk", version="1")
def returns_desk(ctx: Any, claim: dict[str, Any]) -> dict[str, Any]:
    verdict = ctx.model("assess", assess_claim, ASSESS.render(claim=claim["text"]), prompt=ASSESS)
    refund = None
    if verdict == "refund":
        # The limit ships with the code and is re-read on purpose: replay checks runs against today's.
        if claim["amount"] > approval_limit():  # replaytest: ignore[RT203]
            approval = ctx.wait_signal("manager approval", timeout=3 * 86400)
            if not (approval and approval.get("ok")):
                return {"verdict": "declined", "refund": None}
        refund = ctx.step("refund", issue_refund, claim["order"], claim["amount"], idempotency_key=ctx.idempotency_key())
    ctx.step("reply", send_reply, claim["customer"], verdict, idempotency_key=ctx.idempotency_key())
    return {"verdict": verdict, "refund": refund}
'''
ASSESS = "You handle returns. Say 'refund' for damaged goods, else 'explain'. Claim:\n{claim}\n"
CLAIMS = {
    # 120 > the limit of 50: the run waits for a manager (parked).
    "parked-tv": {"customer": "ada@example.com", "order": "T-1", "amount": 120.0, "text": "screen cracked on arrival"},
    # Small enough to refund at once: the run completes.
    "done-mug": {"customer": "bob@example.com", "order": "M-7", "amount": 12.0, "text": "handle cracked"},
}


def _import(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"returns_desk_{id(path)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def desk(tmp_path: Path) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "assess.txt").write_text(ASSESS, encoding="utf-8")
    (tmp_path / "refund_limit.txt").write_text("50\n", encoding="utf-8")
    (tmp_path / "returns_desk.py").write_text(RETURNS_DESK, encoding="utf-8")
    module = _import(tmp_path / "returns_desk.py")
    with Journal(tmp_path / "journal.sqlite3") as journal:
        worker = Worker(journal, [module.returns_desk])
        for run_id, claim in CLAIMS.items():
            journal.start(module.returns_desk, claim, run_id=run_id, workflow_id=run_id)
        worker.run_until_idle()
        for run_id in CLAIMS:
            save_history(journal.export(run_id), tmp_path / "histories" / f"{run_id}.json")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["returns_desk:returns_desk"]\n', encoding="utf-8"
    )
    return tmp_path


def _check(project: Path, *args: str, env: dict[str, str] | None = None, lint: str = "returns_desk.py") -> tuple[int, dict[str, Any]]:
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "check", "--format", "json", *args, lint],
        cwd=project, capture_output=True, text=True, timeout=180, env={**os.environ, **(env or {})},
    )
    assert run.returncode in (0, 1, 2), run.stdout + run.stderr
    return run.returncode, json.loads(run.stdout)["replay"]


def _outcomes(replay: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {
        Path(r["history"]).stem: (r["status"], (r.get("divergence") or {}).get("kind"))
        for r in replay["results"]
    }


def _green_and_cached(project: Path) -> None:
    code, first = _check(project)
    assert (code, _outcomes(first), first["skipped"]) == (0, {"parked-tv": ("passed", None), "done-mug": ("passed", None)}, 0)
    code, second = _check(project)
    assert (code, _outcomes(second), second["skipped"]) == (0, {}, 2), "an unchanged project must be skipped"


@pytest.mark.slow
def test_editing_only_a_prompt_template_file_read_at_import_replays_and_fails_like_no_cache(desk: Path) -> None:
    _green_and_cached(desk)
    template = desk / "prompts" / "assess.txt"
    template.write_text(ASSESS.replace("You handle returns.", "You handle returns politely."), encoding="utf-8")

    cached_code, cached = _check(desk)
    fresh_code, fresh = _check(desk, "--no-cache")
    # The parked run would resume under the new prompt (fail); the finished one only documents it (warn).
    expected = {"parked-tv": ("diverged", "prompt-drift"), "done-mug": ("passed", None)}
    assert (cached_code, _outcomes(cached), cached["skipped"]) == (1, expected, 0)
    assert (fresh_code, _outcomes(fresh)) == (1, expected)
    assert [r["warnings"] != [] for r in cached["results"] if Path(r["history"]).stem == "done-mug"] == [True]


@pytest.mark.slow
def test_editing_a_file_read_only_while_replaying_replays_and_fails_like_no_cache(desk: Path) -> None:
    _green_and_cached(desk)
    # Now the mug's 12 is over the limit: today's code waits for a manager where the run refunded at once.
    # (The parked TV run still waits, as recorded.)
    (desk / "refund_limit.txt").write_text("10\n", encoding="utf-8")

    cached_code, cached = _check(desk)
    fresh_code, fresh = _check(desk, "--no-cache")
    expected = {"parked-tv": ("passed", None), "done-mug": ("diverged", "command-mismatch")}
    assert (cached_code, _outcomes(cached), cached["skipped"]) == (1, expected, 0)
    assert (fresh_code, _outcomes(fresh)) == (1, expected)


@pytest.mark.slow
def test_a_deleted_read_file_is_a_miss(desk: Path) -> None:
    _green_and_cached(desk)
    (desk / "refund_limit.txt").unlink()

    cached_code, cached = _check(desk)
    fresh_code, fresh = _check(desk, "--no-cache")
    # The mug's replay raises where it reads the limit, before the refund it recorded; the TV's run reads
    # the limit after its last recorded event, so it now fails before the wait it is parked at (the engine
    # would fail it on resume): both are replayed again and both diverge.
    expected = {"parked-tv": ("diverged", "missing-command"), "done-mug": ("diverged", "missing-command")}
    assert (cached_code, _outcomes(cached), cached["skipped"]) == (1, expected, 0)
    assert (fresh_code, _outcomes(fresh)) == (1, expected)


@pytest.mark.slow
def test_a_file_the_code_never_reads_changes_nothing(desk: Path) -> None:
    _green_and_cached(desk)
    (desk / "NOTES.txt").write_text("returns desk runbook\n", encoding="utf-8")
    (desk / "journal.sqlite3").write_bytes(b"")  # the live journal is not an input of replay
    code, replay = _check(desk)
    assert (code, _outcomes(replay), replay["skipped"]) == (0, {}, 2)


@pytest.mark.slow
def test_a_prompt_changed_by_the_environment_is_a_miss(desk: Path) -> None:
    """No file changed, but the current code's prompt manifest did: the entry does not hold."""
    _green_and_cached(desk)
    signed = {"DESK_SIGNATURE": "\n-- returns team, Lisbon"}
    cached_code, cached = _check(desk, env=signed)
    fresh_code, fresh = _check(desk, "--no-cache", env=signed)
    expected = {"parked-tv": ("diverged", "prompt-drift"), "done-mug": ("passed", None)}
    assert (cached_code, _outcomes(cached), cached["skipped"]) == (1, expected, 0)
    assert (fresh_code, _outcomes(fresh)) == (1, expected)


def _key(tmp_path: Path, options: Any, origins: tuple[str, ...] = ()) -> str | None:
    from replaytest.replay.adapter import WorkflowSet
    from replaytest.replay.cache import ReplayCache

    history = tmp_path / "run.json"
    history.write_text('{"format": "replaytest-history"}', encoding="utf-8")
    return ReplayCache(tmp_path / "cache", tmp_path, WorkflowSet(origins=origins), options)._key(history)


def test_an_option_added_to_replay_options_keys_the_entries_without_being_listed(tmp_path: Path) -> None:
    """The option part of the key is the whole dataclass: a new field changes the key, with its default
    value and with any other value, while ``details`` (report only) still shares entries."""
    from replaytest.replay.adapter import ReplayOptions

    extended = dataclasses.make_dataclass(
        "ReplayOptions", [("exclude", tuple, dataclasses.field(default=()))], bases=(ReplayOptions,), frozen=True
    )
    base = _key(tmp_path, ReplayOptions())
    with_default = _key(tmp_path, extended())
    with_value = _key(tmp_path, extended(exclude=("histories/2025/*",)))
    assert len({base, with_default, with_value}) == 3
    assert _key(tmp_path, extended(exclude=("histories/2025/*",), details=True)) == with_value


def test_the_key_holds_the_versions_and_the_current_code_specs(tmp_path: Path) -> None:
    import replaytest
    from replaytest.replay.adapter import ReplayOptions, WorkflowSet
    from replaytest.replay.cache import CACHE_VERSION, ReplayCache

    cache = ReplayCache(tmp_path / "cache", tmp_path, WorkflowSet(origins=("app:flow",)), ReplayOptions())
    salt = json.loads(cache.salt)
    assert CACHE_VERSION == 2  # entries of format 1 did not record read files: never found now
    assert (salt["cache"], salt["replaytest"], salt["python"], salt["workflows"]) == (
        2, replaytest.__version__, sys.version, ["app:flow"]
    )
    assert _key(tmp_path, ReplayOptions(), ("app:flow",)) != _key(tmp_path, ReplayOptions(), ("app:flow", "app:other"))


# A nightly restock report: the whole catalog is one step's result, large enough to be stored as a blob
# beside the history instead of inline.
RESTOCK = '''\
from typing import Any

from replaytest.journal import workflow


def load_catalog(warehouse: str) -> list[dict[str, Any]]:
    return [{"sku": f"SKU-{n:05d}", "on_hand": n % 7, "title": f"{warehouse} item number {n}"} for n in range(3000)]


@workflow(name="restock", version="1")
def restock(ctx: Any, warehouse: str) -> int:
    catalog = ctx.step("load catalog", load_catalog, warehouse)
    return sum(1 for item in catalog if item["on_hand"] == 0)
'''


def test_a_deleted_blob_of_the_history_is_a_miss(tmp_path: Path) -> None:
    (tmp_path / "restock.py").write_text(RESTOCK, encoding="utf-8")
    module = _import(tmp_path / "restock.py")
    with Journal(tmp_path / "journal.sqlite3") as journal:
        journal.start(module.restock, "lisbon", run_id="nightly", workflow_id="nightly")
        Worker(journal, [module.restock]).run_until_idle()
        save_history(journal.export("nightly"), tmp_path / "histories" / "nightly.json")
    blobs = list((tmp_path / "histories" / "blobs" / "sha256").iterdir())
    assert len(blobs) == 1, "the catalog must be stored as a blob for this test"
    from replaytest.replay.cache import blob_files

    assert blob_files(tmp_path / "histories" / "nightly.json") == {blobs[0].resolve()}
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\npaths = ["histories"]\nworkflows = ["restock:restock"]\n', encoding="utf-8"
    )
    code, first = _check(tmp_path, lint="restock.py")
    assert (code, _outcomes(first), first["skipped"]) == (0, {"nightly": ("passed", None)}, 0)
    code, second = _check(tmp_path, lint="restock.py")
    assert (code, _outcomes(second), second["skipped"]) == (0, {}, 1)

    blobs[0].unlink()
    cached_code, cached = _check(tmp_path, lint="restock.py")
    fresh_code, fresh = _check(tmp_path, "--no-cache", lint="restock.py")
    assert (cached_code, _outcomes(cached), cached["skipped"]) == (2, {"nightly": ("error", None)}, 0)
    assert (fresh_code, _outcomes(fresh)) == (2, {"nightly": ("error", None)})
    assert "cannot be read" in cached["results"][0]["error"]
