"""RT304: writing module-level state from orchestration code."""

from __future__ import annotations

from replaytest.lint.model import Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import DEFAULT_REPLACEMENTS, GlobalWrite, Invalid, Rule


class WritesModuleState(Rule):
    """
    ## What it does
    Finds `global` statements and mutations of module-level containers (`CACHE[key] = value`,
    `SEEN.add(x)`, `RESULTS.append(x)`) in orchestration code.

    ## Why is this bad?
    Module state outlives one workflow run: it is shared by every workflow on the worker and survives
    between the recorded run and the replay, so the replay starts from other values. Temporal's sandbox
    reloads modules per run, so such state also silently resets.

    ## Example
    ```python
    PROCESSED.add(order_id)
    ```

    ## Use instead
    Keep the state in the workflow's own variables (instance attributes in a Temporal workflow class),
    or persist it through a step.
    """

    code = "RT304"
    name = "writes-module-state"
    category = "global-state"
    summary = "Module-level state written from orchestration code"
    what = "writes module-level state"

    def check_global_write(self, write: GlobalWrite) -> str | None:
        text = write.text or write.name
        spelled = {
            "assignment": f"{text} = ...",
            "item assignment": f"{text} = ...",
            "augmented assignment": f"{text} += ...",
            "del": f"del {text}",
        }
        return spelled.get(write.how, text if write.text else f"{write.name}.{write.how}")

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        replacement = (profile.replacements.get(self.category) if profile else None) or DEFAULT_REPLACEMENTS[self.category]
        what = f"{effect.subject} writes module-level state"
        if via is not None:
            return f"{via} reaches code where {what}; use {replacement}"
        return f"{what} in workflow code; use {replacement}"

    VALID = (
        """
from temporalio import workflow

LIMITS = {"max": 3}

@workflow.defn
class Counter:
    def __init__(self) -> None:
        self.seen = set()

    @workflow.run
    async def run(self, item: str) -> int:
        self.seen.add(item)
        return LIMITS["max"]
""",
    )
    INVALID = (
        Invalid(
            """
from temporalio import workflow

SEEN = set()

@workflow.defn
class Counter:
    @workflow.run
    async def run(self, item: str) -> int:
        SEEN.add(item)
        return len(SEEN)
""",
            line=9, column=9,
            message='SEEN.add(item) writes module-level state in workflow code; use attributes of the workflow instance',
        ),
        Invalid(
            """
from dbos import DBOS

COUNT = 0

@DBOS.workflow()
def bump() -> int:
    global COUNT
    COUNT += 1
    return COUNT
""",
            line=8, column=5,
            message="COUNT += ... writes module-level state in workflow code; use state held in the workflow's own variables",
        ),
    )
