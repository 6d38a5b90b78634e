"""RT003: a suppression comment that suppressed nothing."""

from __future__ import annotations

from replaytest.lint.model import Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import Invalid, Rule


class SuppressesNothing(Rule):
    """
    ## What it does
    Reports a `# replaytest: ignore[...]` or `# noqa: RTxxx` comment (or one code in it) that
    suppressed no finding in this run, like ruff's RUF100. Only codes whose rules are enabled for
    the file are reported; an unknown code in a comment is a configuration error (exit 2), not this.

    ## Why is this bad?
    A stale suppression stays on its line after the code it excused has gone; the next replay-unsafe
    call written on that line is then hidden without anyone deciding so. A comment on a helper's line
    is used when it suppresses the finding that line causes at the workflow call sites reaching it.

    ## Example
    ```python
    @workflow.defn
    class Greeter:
        @workflow.run
        async def run(self) -> str:
            return "hello"  # replaytest: ignore[clock]
    ```

    ## Use instead
    Delete the comment, or the code in it that no longer applies:
    ```python
    @workflow.defn
    class Greeter:
        @workflow.run
        async def run(self) -> str:
            return "hello"
    ```
    """

    code = "RT003"
    name = "unused-suppression"
    category = "suppression"
    summary = "Suppression comment that suppresses nothing"

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        return effect.subject

    VALID = (
        """
import time

from temporalio import workflow

@workflow.defn
class Greeter:
    @workflow.run
    async def run(self) -> float:
        return time.time()  # replaytest: ignore[clock]
""",
    )
    INVALID = (
        Invalid(
            """
from temporalio import workflow

@workflow.defn
class Greeter:
    @workflow.run
    async def run(self) -> str:
        return "hello"  # replaytest: ignore[clock]
""",
            line=7, column=25,
            message='unused suppression: `# replaytest: ignore[clock]` suppresses nothing here',
        ),
        Invalid(
            """
from temporalio import workflow

@workflow.defn
class Greeter:
    @workflow.run
    async def run(self) -> str:
        return "hello"  # noqa: RT101
""",
            line=7, column=25,
            message='unused suppression: `# noqa: RT101` suppresses nothing here',
        ),
    )
