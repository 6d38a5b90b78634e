"""RT301: depending on the order of a set, a directory listing or a str/bytes hash."""

from __future__ import annotations

from replaytest.lint.model import Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import DEFAULT_REPLACEMENTS, CallFact, Invalid, Rule, UnorderedUse

_SOURCES = {"set": "a set", "listing": "a directory listing", "dict": "a dict built from a set or listing"}


class DependsOnUnstableOrder(Rule):
    """
    ## What it does
    Finds orchestration code that iterates, indexes, joins or lists a set or frozenset (including set
    algebra results and set comprehensions), a directory listing (`os.listdir`, `os.scandir`,
    `glob.glob`, `Path.iterdir/glob/rglob`; also when returned) or a dict built from one of those, and
    `hash()` of a str or bytes. `sorted(...)`, `len`, `min`/`max`, `sum`, `any`/`all` and membership tests are fine, and so is
    iterating a dict built from ordered data.

    ## Why is this bad?
    String hashing is salted per process (`PYTHONHASHSEED`), so set order and `hash()` of text change
    between the recorded run and the replay; directory order depends on the filesystem. Steps are then
    scheduled in another order and the replay diverges.

    ## Example
    ```python
    for region in set(regions):
        await workflow.execute_activity(deploy, region, start_to_close_timeout=TIMEOUT)
    ```

    ## Use instead
    ```python
    for region in sorted(set(regions)):
        await workflow.execute_activity(deploy, region, start_to_close_timeout=TIMEOUT)
    ```
    """

    code = "RT301"
    name = "depends-on-unstable-order"
    category = "iteration-order"
    summary = "Order of a set, directory listing or str hash used in orchestration code"
    what = "depends on an order that changes between runs"
    calls = {"builtins.hash": "is salted per process"}

    def accept_call(self, call: CallFact) -> bool:
        positional = call.positional
        return len(positional) == 1 and call.kind_of(positional[0]) == "str"

    def check_unordered(self, use: UnorderedUse) -> str | None:
        return f"{use.text}: {use.how} {_SOURCES.get(use.source, use.source)}"

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        replacement = (profile.replacements.get(self.category) if profile else None) or DEFAULT_REPLACEMENTS[self.category]
        if effect.qualname == "builtins.hash" and effect.subject.endswith("()"):
            what = f"{effect.subject} of a str or bytes is salted per process"
            replacement = "a stable digest (zlib.crc32, hashlib)"
        else:
            what = f"{effect.subject}, whose order changes between runs"
        if via is not None:
            return f"{via} reaches code where {what}; use {replacement}"
        return f"{what}; use {replacement}"

    VALID = (
        """
from temporalio import workflow

@workflow.defn
class Deploy:
    @workflow.run
    async def run(self, regions: list) -> list:
        unique = set(regions)
        return [r for r in sorted(unique)] + [len(unique), "x" in unique]
""",
        """
from dbos import DBOS

@DBOS.workflow()
def totals(prices: dict) -> list:
    return [name for name in prices]
""",
    )
    INVALID = (
        Invalid(
            """
from temporalio import workflow

@workflow.defn
class Deploy:
    @workflow.run
    async def run(self, regions: list) -> None:
        for region in set(regions):
            await workflow.execute_activity("deploy", region, start_to_close_timeout=None)
""",
            line=7, column=23,
            message='set(regions): iterates a set, whose order changes between runs; use sorted(...)',
        ),
        Invalid(
            """
from dbos import DBOS

@DBOS.workflow()
def label(tags: list, extra: set) -> str:
    seen = {t.lower() for t in tags}
    return ",".join(seen | extra)
""",
            line=6, column=21,
            message='seen | extra: joins a set, whose order changes between runs; use sorted(...)',
        ),
        Invalid(
            """
import os
from dbos import DBOS

@DBOS.workflow()
def first_file(folder: str) -> str:
    return sorted(os.listdir(folder))[0] + [name for name in os.listdir(folder)][0]
""",
            line=6, column=62,
            message='os.listdir(folder): iterates a directory listing, whose order changes between runs; use sorted(...)',
        ),
        Invalid(
            """
from temporalio import workflow

@workflow.defn
class Shard:
    @workflow.run
    async def run(self, key: str) -> int:
        return hash(key) % 8
""",
            line=7, column=16,
            message='hash() of a str or bytes is salted per process; use a stable digest (zlib.crc32, hashlib)',
        ),
    )
