"""README "Before you deploy": its worked example — the bundled journal agent with the step the README shows
added after the approval wait, the README's pyproject.toml, the bundled histories, the bundled agent committed
as the deployed code — prints exactly the report the README shows (with its verified guard), and the exit
codes it names."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "README.md").read_text(encoding="utf-8").split("## Before you deploy", 1)[1].split("\n## ", 1)[0]
HELPER = '''

def log_approval(approval: dict[str, Any]) -> dict[str, Any]:
    return {"logged": bool(approval and approval.get("ok"))}
'''


def test_the_worked_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    snippet = re.search(r"```python\n# agent\.py[^\n]*\n(.*?)```", SECTION, flags=re.S)
    pyproject = re.search(r"```toml\n# pyproject\.toml\n(.*?)```", SECTION, flags=re.S)
    shown = re.search(r"```text\n\$ replaytest impact\n(.*?)```", SECTION, flags=re.S)
    assert snippet and pyproject and shown
    bundled = (ROOT / "fixtures/journal_app/agent.py").read_text(encoding="utf-8")
    wait, added, after = snippet.group(1).splitlines()
    assert wait + "\n" + after + "\n" in bundled and added not in bundled
    changed = bundled.replace(wait + "\n", wait + "\n" + added + "\n").replace(
        '\n\n@workflow(name="support_agent"', HELPER + '\n\n@workflow(name="support_agent"')
    # The project is a git repository whose main branch has the bundled agent: the guard's old code.
    (tmp_path / "agent.py").write_text(bundled, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(pyproject.group(1), encoding="utf-8")
    shutil.copytree(ROOT / "fixtures/histories", tmp_path / "histories")
    for args in (["init", "-q", "-b", "main"], ["-c", "user.email=dev@example.com", "-c", "user.name=Dev", "add", "-A"],
                 ["-c", "user.email=dev@example.com", "-c", "user.name=Dev", "commit", "-q", "-m", "agent as deployed"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    (tmp_path / "agent.py").write_text(changed, encoding="utf-8")

    def impact(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "replaytest", "impact", "--quiet", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=180)

    run = impact()
    assert run.stdout == shown.group(1), run.stdout + run.stderr
    assert run.returncode == 1 and "It exits 1." in SECTION
    assert impact("--in-flight-only").returncode == 0 and "`replaytest impact --in-flight-only` exits 0" in SECTION
