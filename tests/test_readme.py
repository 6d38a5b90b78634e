"""The README stays true: its rule table lists every registered rule, `.ci/run` runs exactly the README's
test command, and the README's example lint output is what the linter prints for that code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from replaytest.lint.rules import load_rules

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _shell_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, flags=re.S)


def test_rule_table_lists_every_rule_with_its_category() -> None:
    rows = dict(re.findall(r"^\| `(RT\d{3})` \| `([a-z-]+)` \|", README, flags=re.M))
    registered = {rule.code: rule.category for rule in load_rules()}
    assert rows == registered


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_command = next(block.strip() for block in _shell_blocks() if "pytest" in block)
    ci_script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci_script.splitlines(), f"{test_command!r} is not a line of .ci/run"


def test_thirty_second_example_output_is_what_lint_prints(tmp_path: Path) -> None:
    sources = dict(re.findall(r"```python\n# (app/\w+\.py)\n(.*?)```", README, flags=re.S))
    assert set(sources) == {"app/workflows.py", "app/util.py"}
    for name, text in sources.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "app" / "__init__.py").write_text("", encoding="utf-8")
    shown = re.search(r"\$ replaytest lint app\n(.*?)\n\n", README, flags=re.S)
    assert shown is not None
    run = subprocess.run(
        [sys.executable, "-m", "replaytest", "lint", "--no-cache", "app"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 1, run.stderr
    assert run.stdout.strip() == shown.group(1).strip()
