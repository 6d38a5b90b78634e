"""Finding the patch calls already in workflow code (libcst): each engine's spelling, the workflow type
from the decorator around the call, and a note — never a silent skip — for what cannot be told."""

from __future__ import annotations

from pathlib import Path

from replaytest.impact.model import UNKNOWN_WORKFLOW_TYPE
from replaytest.impact.retirement import PatchSite, attach_patches, find_patch_calls

TEMPORAL = '''\
from temporalio import workflow
from temporalio.workflow import patched


@workflow.defn(name="InsuranceClaim")
class InsuranceClaim:
    @workflow.run
    async def run(self, claim):
        if workflow.patched("fraud-screen"):
            pass
        workflow.deprecate_patch("adjuster-v2")
        if patched("payout-split"):
            pass


@workflow.defn
class Renewal:
    @workflow.run
    async def run(self, policy):
        if workflow.patched(
            "renewal-quote"
        ):
            pass
'''

DBOS_APP = '''\
from dbos import DBOS


@DBOS.workflow()
def place_order(order_id):
    if DBOS.patch("receipt-v2"):
        pass
    DBOS.deprecate_patch("stock-v1")


@DBOS.workflow(name="pack")
async def pack_parcel(order_id):
    if await DBOS.patch_async("weigh-v2"):
        pass
'''

JOURNAL_ODD = '''\
from replaytest.journal import workflow

PATCH = "dynamic-id"


@workflow("triage")
def triage(ctx, ticket):
    if ctx.patched(PATCH):
        pass


def shared_helper(ctx):
    return ctx.patched("helper-patch")
'''


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path.resolve()


def _summary(calls: list[PatchSite]) -> list[tuple]:
    return [(c.patch_id, c.engine, c.deprecated, c.line, c.end_line, c.workflow_type) for c in calls]


def test_temporal_calls_and_their_workflow_types(tmp_path: Path) -> None:
    path = _write(tmp_path, "claims.py", TEMPORAL)
    calls, notes = find_patch_calls([path])
    assert notes == []
    assert _summary(calls) == [
        ("fraud-screen", "temporal", False, 9, 9, "InsuranceClaim"),
        ("adjuster-v2", "temporal", True, 11, 11, "InsuranceClaim"),
        ("payout-split", "temporal", False, 12, 12, "InsuranceClaim"),
        ("renewal-quote", "temporal", False, 20, 22, "Renewal"),  # no name=: the class name
    ]


def test_dbos_calls_and_their_workflow_types(tmp_path: Path) -> None:
    path = _write(tmp_path, "shop.py", DBOS_APP)
    calls, _ = find_patch_calls([path])
    assert _summary(calls) == [
        ("receipt-v2", "dbos", False, 6, 6, "place_order"),
        ("stock-v1", "dbos", True, 8, 8, "place_order"),
        ("weigh-v2", "dbos", False, 13, 13, "pack"),
    ]


def test_what_cannot_be_told_is_a_note(tmp_path: Path) -> None:
    path = _write(tmp_path, "triage.py", JOURNAL_ODD)
    broken = _write(tmp_path, "broken.py", "def oops(:\n    ctx.patched('x')\n")
    calls, notes = find_patch_calls([path, broken])
    assert _summary(calls) == [
        (None, "journal", False, 8, 8, "triage"),
        ("helper-patch", "journal", False, 13, 13, None),
    ]
    assert notes == [f"{broken}: not read for patch calls (ParserSyntaxError): its patches were not checked"]
    impacts = attach_patches([], [], [path, broken])
    by_type = {impact.workflow_type: impact for impact in impacts}
    assert sorted(by_type) == [UNKNOWN_WORKFLOW_TYPE, "triage"]
    assert by_type["triage"].patches == []
    assert by_type["triage"].notes == [
        f"{path}:8: ctx.patched(PATCH) has no string literal id: which runs need it was not checked "
        "(write the id as a literal)"
    ]
    assert by_type[UNKNOWN_WORKFLOW_TYPE].patches == []
    assert by_type[UNKNOWN_WORKFLOW_TYPE].notes == [
        f"{broken}: not read for patch calls (ParserSyntaxError): its patches were not checked",
        f"{path}:13: ctx.patched(\"helper-patch\") is in no decorated workflow and no replayed history reached it: "
        "its workflow type, and so its retirement, was not checked",
    ]
