"""RT204: reading the process environment in orchestration code."""

from __future__ import annotations

from replaytest.lint.rule import Invalid, Rule


class ReadsProcessEnvironment(Rule):
    """
    ## What it does
    Finds reads of `os.environ`, `os.getenv`, the host name, process ids, `platform.*` and the current
    user in orchestration code. Setting or deleting an item (`os.environ["KEY"] = value`,
    `del os.environ["KEY"]`) reads nothing and is not reported; a later read of it is.

    ## Why is this bad?
    The replay runs on another worker, often with other settings; a decision taken on an environment
    variable or host name then differs from the recorded one.

    ## Example
    ```python
    region = os.environ["REGION"]
    ```

    ## Use instead
    Pass the value in the workflow input, or read it in a step whose result is recorded.
    """

    code = "RT204"
    name = "reads-process-environment"
    category = "environment"
    summary = "Environment, host or process read in orchestration code"
    what = "reads the process environment"
    reads = {"os.environ": "", "os.environb": ""}
    calls = {
        name: ""
        for name in (
            "os.getenv", "os.getenvb", "os.getpid", "os.getppid", "os.getuid", "os.geteuid", "os.getlogin",
            "os.cpu_count", "os.uname", "os.getcwd", "platform.*", "socket.gethostname", "socket.getfqdn",
            "getpass.getuser", "dotenv.load_dotenv", "dotenv.dotenv_values",
        )
    }

    VALID = (
        """
import os
from temporalio import activity

@activity.defn
async def region() -> str:
    return os.environ["REGION"]
""",
    )
    INVALID = (
        Invalid(
            """
import os
from temporalio import workflow

@workflow.defn
class Deploy:
    @workflow.run
    async def run(self) -> str:
        return os.environ.get("REGION", "eu")
""",
            line=8, column=16,
            message='os.environ reads the process environment in workflow code; use workflow input or an activity',
        ),
        Invalid(
            """
from os import getenv
from dbos import DBOS

@DBOS.workflow()
def deploy() -> str:
    return getenv("REGION") or "eu"
""",
            line=6, column=12,
            message='getenv() reads the process environment in workflow code; use workflow input or a @DBOS.step() function',
        ),
    )
