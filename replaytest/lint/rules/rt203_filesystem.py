"""RT203: filesystem access in orchestration code."""

from __future__ import annotations

from replaytest.lint.rule import Invalid, Rule

_PATH_METHODS = (
    "read_text", "read_bytes", "write_text", "write_bytes", "open", "exists", "is_file", "is_dir", "mkdir", "unlink", "rmdir", "stat", "touch", "rename", "replace", "lstat", "chmod",
)


def _filesystem_calls() -> dict[str, str]:
    names = ["builtins.open", "io.open", "os.open", "os.remove", "os.unlink", "os.rename", "os.replace",
             "os.makedirs", "os.mkdir", "os.rmdir", "os.removedirs", "os.stat",
             "os.lstat", "os.chmod", "os.truncate", "os.path.exists", "os.path.isfile", "os.path.isdir",
             "os.path.getsize", "os.path.getmtime", "os.path.getctime", "os.path.getatime", "os.path.lexists",
             "shutil.*", "tempfile.*", "fileinput.input", "aiofiles.open"]
    names += [f"pathlib.Path.{method}" for method in _PATH_METHODS]
    calls = {name: "" for name in names}
    # pandas' readers take a path or a URL (``pd.read_csv("https://…/rates.csv")``): either way the data is
    # read again on replay, and may have changed.
    calls.update({f"pandas.{reader}": "reads a file or URL outside a recorded step" for reader in _PANDAS_READERS})
    return calls


_PANDAS_READERS = (
    "read_csv", "read_table", "read_fwf", "read_json", "read_excel", "read_parquet", "read_feather", "read_orc",
    "read_pickle", "read_html", "read_xml", "read_hdf", "read_sas", "read_spss", "read_stata",
)


class TouchesFilesystemOutsideStep(Rule):
    """
    ## What it does
    Finds `open()`, `pathlib.Path` reads and writes, `os` file operations, `shutil`, `tempfile` and pandas'
    readers (`pd.read_csv(path_or_url)` …) in orchestration code. Directory listings are reported by RT301 where their order is used.

    ## Why is this bad?
    Files change between the recorded run and the replay, and the replay may run on another machine:
    what the workflow read is not what it reads now, and writes happen again.

    ## Example
    ```python
    config = Path("rules.json").read_text()
    ```

    ## Use instead
    ```python
    config = await workflow.execute_activity(load_rules, start_to_close_timeout=timedelta(seconds=5))
    ```
    """

    code = "RT203"
    name = "touches-filesystem-outside-step"
    category = "filesystem"
    summary = "Filesystem access in orchestration code"
    what = "touches the filesystem outside a recorded step"
    calls = _filesystem_calls()

    VALID = (
        """
from pathlib import Path
from temporalio import workflow

@workflow.defn
class Report:
    @workflow.run
    async def run(self, name: str) -> str:
        return str(Path("reports") / name)
""",
    )
    INVALID = (
        Invalid(
            """
from pathlib import Path
from temporalio import workflow

@workflow.defn
class Report:
    @workflow.run
    async def run(self, name: str) -> str:
        return (Path("reports") / name).read_text()
""",
            line=8, column=16,
            message='(...).read_text() touches the filesystem outside a recorded step in workflow code; use an activity (workflow.execute_activity)',
        ),
        Invalid(
            """
from dbos import DBOS

@DBOS.workflow()
def load(path: str) -> str:
    with open(path) as handle:
        return handle.read()
""",
            line=5, column=10,
            message='open() touches the filesystem outside a recorded step in workflow code; use a @DBOS.step() function',
        ),
        Invalid(
            """
import pandas as pd
from temporalio import workflow

@workflow.defn
class Rates:
    @workflow.run
    async def run(self) -> float:
        rates = pd.read_csv("https://example.com/rates.csv")
        return float(rates["eur"].iloc[-1])
""",
            line=8, column=17,
            message='pd.read_csv() reads a file or URL outside a recorded step in workflow code; use an activity '
                    '(workflow.execute_activity)',
        ),
    )
