"""RT001 and RT002: files that could not be checked."""

from __future__ import annotations

from replaytest.lint.model import Effect
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.rule import Rule


class CannotParseFile(Rule):
    """
    ## What it does
    Reports a file that could not be analysed: a syntax error (at its position), a source that cannot
    be decoded in its declared encoding (PEP 263), a binary or unreadable file.

    ## Why is this bad?
    An unchecked file may hide every other finding; replaytest never skips one silently, and the run
    exits with status 2.

    ## Example
    ```python
    def run(self:
    ```

    ## Use instead
    Fix the syntax or the encoding declaration, or exclude the file with `exclude` in
    `[tool.replaytest]`.
    """

    code = "RT001"
    name = "cannot-parse-file"
    category = "syntax"
    summary = "File could not be parsed or read"

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        return effect.subject

    INVALID = (
        """
from temporalio import workflow

@workflow.defn
class Broken:
    @workflow.run
    async def run(self:
        pass
""",
    )


class FailsInternally(Rule):
    """
    ## What it does
    Reports a file whose analysis raised an unexpected error inside replaytest. The rest of the run
    continues; the run exits with status 2.

    ## Why is this bad?
    The file was not checked. This is a bug in replaytest (or a third-party rule): please report it with
    the file that triggers it.

    ## Example
    Any file that makes the analyzer fail.

    ## Use instead
    Exclude the file until the bug is fixed.
    """

    code = "RT002"
    name = "internal-error"
    category = "syntax"
    summary = "Internal error while analysing the file"

    def message(self, effect: Effect, profile: FrameworkProfile | None, via: str | None = None) -> str:
        return effect.subject
