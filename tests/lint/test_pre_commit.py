"""The pre-commit hooks, run for real: ``.pre-commit-hooks.yaml`` declares them, and a throwaway git
repository whose ``.pre-commit-config.yaml`` points at this checkout (at the release tag) blocks a
commit that stages only a helper module breaking a workflow, then accepts the fixed commit; with the
``replaytest-check`` hook, a commit staging only a prompt text file that breaks a waiting run is blocked.

No network: the hook repository is a fresh git repository made from this working tree's files (tracked
and untracked-but-not-ignored, as they are on disk, so uncommitted work is what gets tested) and tagged
``v<replaytest.__version__>`` there, exactly the ``rev`` the README's hook repository form shows. pre-commit
clones it and installs it into the hook's own environment with pip, from whatever package index pip is
configured for.

The README's first example (``repo: local``, ``language: system``) is run as printed: its YAML block, copied
verbatim into a throwaway repository, makes the real ``pre-commit run --all-files`` fail on a workflow that
reads the wall clock and pass once it is fixed, with the ``replaytest`` of this environment on ``PATH``.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from recipe_kit import write_project

import replaytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

REPO_ROOT = Path(__file__).resolve().parents[2]
TAG = f"v{replaytest.__version__}"


def test_hook_manifest_declares_the_three_hooks() -> None:
    from pre_commit.clientlib import load_manifest

    hooks = {hook["id"]: hook for hook in load_manifest(str(REPO_ROOT / ".pre-commit-hooks.yaml"))}
    default = hooks["replaytest-lint"]
    assert default["entry"] == "replaytest lint --whole-project --force-exclude"
    assert default["language"] == "python" and default["types"] == ["python"] and default["require_serial"]
    assert hooks["replaytest-lint-staged"]["entry"] == "replaytest lint --force-exclude"
    check = hooks["replaytest-check"]
    assert check["entry"] == "replaytest check" and check["pass_filenames"] is False
    # A replay depends on files of any type (a prompt template, pyproject.toml): no filter may skip it.
    assert check["always_run"] is True
    assert (check["types"], check["types_or"], check["files"]) == (["file"], [], "")


def test_readme_documents_the_release_tag_the_example_names() -> None:
    """The example's rev exists once the version is released: the README's release steps create that tag."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    releasing = readme.split("\n## Releasing\n", 1)[1].split("\n## ", 1)[0]
    assert f"git tag -a {TAG} -m \"replaytest {replaytest.__version__}\" && git push origin {TAG}" in releasing


def test_version_is_written_in_one_place_and_the_readme_uses_its_tag() -> None:
    with open(REPO_ROOT / "pyproject.toml", "rb") as handle:
        pyproject = tomllib.load(handle)
    # Written statically in pyproject.toml (where packaging tools and readers look), never computed.
    assert pyproject["project"]["version"] == replaytest.__version__
    assert "version" not in pyproject["project"].get("dynamic", [])
    assert "dynamic" not in pyproject["tool"].get("setuptools", {})
    assert importlib.metadata.version("replaytest") == replaytest.__version__
    init = (REPO_ROOT / "replaytest" / "__init__.py").read_text(encoding="utf-8")
    assert replaytest.__version__ not in init, "the version is written in pyproject.toml only"
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert f"rev: {TAG}" in readme
    assert "id: replaytest-lint\n" in readme


def test_an_uninstalled_checkout_reads_its_version_from_pyproject(tmp_path: Path) -> None:
    """Imported from a checkout without distribution metadata (``PYTHONPATH=.``), the version comes from the
    checkout's pyproject.toml ``[project] version`` rather than failing the import."""
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO_ROOT / "replaytest", checkout / "replaytest", ignore=shutil.ignore_patterns("__pycache__"))
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (checkout / "pyproject.toml").write_text(
        pyproject.replace(f'version = "{replaytest.__version__}"', 'version = "9.8.7"', 1), encoding="utf-8")
    probe = (
        "import os, sys\n"
        "try:\n    import tomli\nexcept ImportError:\n    pass\n"
        "def holds_metadata(folder):\n"
        "    names = os.listdir(folder) if os.path.isdir(folder) else []\n"
        "    return any(n.lower().startswith(('replaytest-', 'replaytest.')) and n.lower().endswith(('.dist-info',"
        " '.egg-info')) for n in names)\n"
        "sys.path[:] = [sys.argv[1]] + [p for p in sys.path if p and not holds_metadata(p)]\n"
        "import replaytest\n"
        "print(replaytest.__version__, replaytest.__file__)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(checkout)], cwd=tmp_path, capture_output=True,
                          text=True, check=True)
    version, location = done.stdout.split()
    assert Path(location).parent == checkout / "replaytest", done.stdout
    assert version == "9.8.7"


def test_the_version_is_what_importlib_metadata_answers() -> None:
    """``entry_points.version`` reads the installed metadata without importing importlib.metadata; it must
    give importlib.metadata's answer, for replaytest and for the other installed distributions."""
    from replaytest import entry_points

    for name in ("replaytest", "pytest", "click", "pathspec", "libcst", "jsonschema"):
        assert entry_points.version(name) == importlib.metadata.version(name), name
    assert entry_points.version("no-such-distribution-here") is None

def _readme_hook_examples() -> list[str]:
    """The YAML blocks of the README's pre-commit section, verbatim, in order."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = re.split(r"\n##+ ", readme.split("\n### As a pre-commit hook\n", 1)[1], maxsplit=1)[0]
    return re.findall(r"```yaml\n(.*?)```", section, flags=re.S)


def test_readme_local_hooks_are_the_manifest_hooks_run_from_the_environment() -> None:
    """The first example runs the installed replaytest (``language: system``) with the manifest's settings;
    the second is the hook repository form, pinned to a rev."""
    local, remote = _readme_hook_examples()
    (repository,) = yaml.safe_load(local)["repos"]
    assert repository["repo"] == "local"
    manifest = {hook["id"]: hook for hook in yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert [hook["id"] for hook in repository["hooks"]] == ["replaytest-lint", "replaytest-check"]
    for hook in repository["hooks"]:
        assert hook["language"] == "system"
        declared = {key: value for key, value in manifest[hook["id"]].items() if key not in ("description", "language")}
        assert {key: value for key, value in hook.items() if key != "language"} == declared
    (pinned,) = yaml.safe_load(remote)["repos"]
    assert pinned["rev"] == TAG and [hook["id"] for hook in pinned["hooks"]] == ["replaytest-lint"]


HAZARD_WORKFLOW = """\
from datetime import datetime

from temporalio import workflow


@workflow.defn
class Greeting:
    @workflow.run
    async def run(self, name: str) -> str:
        return f"hello {name} at {datetime.now()}"
"""


@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_readme_local_example_fails_a_wall_clock_read_and_passes_the_fix(tmp_path: Path) -> None:
    env = _hook_environment(tmp_path)
    # The hooks run `replaytest` from PATH, as in a shell where the environment that has it is active.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    project = tmp_path / "user-project"
    (project / "app").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    (project / "app" / "__init__.py").write_text("", encoding="utf-8")
    workflow_file = project / "app" / "workflows.py"
    workflow_file.write_text(HAZARD_WORKFLOW, encoding="utf-8")
    (project / ".pre-commit-config.yaml").write_text(_readme_hook_examples()[0], encoding="utf-8")
    _git("init", "-q", cwd=project, env=env)
    _git("add", ".", cwd=project, env=env)

    def run_hooks() -> tuple[int, str]:
        done = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=project, env=env,
                              capture_output=True, text=True, timeout=600)
        return done.returncode, done.stdout + done.stderr

    code, output = run_hooks()
    line = HAZARD_WORKFLOW.splitlines().index('        return f"hello {name} at {datetime.now()}"') + 1
    assert code == 1, output
    assert f"app/workflows.py:{line}:" in output and "RT101" in output and "datetime.now()" in output, output
    assert re.search(r"replaytest lint\.+Failed", output) and re.search(r"replaytest check \(lint \+ replay\)\.+Failed", output), output

    workflow_file.write_text(HAZARD_WORKFLOW.replace("datetime.now()", "workflow.now()")
                             .replace("from datetime import datetime\n\n", ""), encoding="utf-8")
    _git("add", ".", cwd=project, env=env)
    code, output = run_hooks()
    assert code == 0, output
    assert re.search(r"replaytest lint\.+Passed", output) and re.search(r"replaytest check \(lint \+ replay\)\.+Passed", output), output


def _git(*args: str, cwd: Path, env: dict[str, str]) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _hook_repository(target: Path, env: dict[str, str]) -> Path:
    """A git repository holding this working tree's files, committed and tagged TAG."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT, env=env, check=True, capture_output=True,
    ).stdout.decode("utf-8").split("\0")
    for relative in filter(None, listing):
        source = REPO_ROOT / relative
        if source.is_file():  # a tracked file deleted in the working tree is left out
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / relative)
    _git("init", "-q", cwd=target, env=env)
    _git("add", "-A", cwd=target, env=env)
    _git("commit", "-q", "-m", "replaytest working tree", cwd=target, env=env)
    _git("tag", TAG, cwd=target, env=env)
    return target


WORKFLOW = '''\
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from app.util import region


@workflow.defn
class Orders:
    @workflow.run
    async def run(self, order_id: str) -> str:
        return f"{region()}-{order_id}"
'''
WORKFLOW_CALL_LINE = WORKFLOW.splitlines().index('        return f"{region()}-{order_id}"') + 1
CLEAN_HELPER = 'def region() -> str:\n    return "eu"\n'
BREAKING_HELPER = 'import os\n\n\ndef region() -> str:\n    return os.environ.get("REGION", "eu")\n'
FIXED_HELPER = 'def region(default: str = "eu") -> str:\n    return default\n'


def _config(hook_id: str, hook_repo: Path) -> str:
    return textwrap.dedent(f"""\
        repos:
          - repo: {hook_repo}
            rev: {TAG}
            hooks:
              - id: {hook_id}
        """)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_commit_staging_only_a_breaking_helper_is_blocked_and_the_fix_passes(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com",
        GIT_CONFIG_NOSYSTEM="1", HOME=str(tmp_path / "home"), NO_COLOR="1",
    )
    (tmp_path / "home").mkdir()
    hook_repo = _hook_repository(tmp_path / "hook-repo", env)

    project = tmp_path / "user-project"
    (project / "app").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.replaytest]\n", encoding="utf-8")
    (project / "app" / "__init__.py").write_text("", encoding="utf-8")
    (project / "app" / "wf.py").write_text(WORKFLOW, encoding="utf-8")
    helper = project / "app" / "util.py"
    helper.write_text(CLEAN_HELPER, encoding="utf-8")
    (project / ".pre-commit-config.yaml").write_text(_config("replaytest-lint", hook_repo), encoding="utf-8")
    (project / "staged-only.yaml").write_text(_config("replaytest-lint-staged", hook_repo), encoding="utf-8")
    _git("init", "-q", cwd=project, env=env)
    _git("add", ".", cwd=project, env=env)
    _git("commit", "-q", "-m", "clean workflow", cwd=project, env=env)  # before the hook is installed
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=project, env=env, check=True,
                   capture_output=True)

    # A commit that stages only the helper: the workflow file is untouched, the violation is in it.
    helper.write_text(BREAKING_HELPER, encoding="utf-8")
    _git("add", "app/util.py", cwd=project, env=env)
    blocked = subprocess.run(["git", "commit", "-m", "read REGION from the environment"], cwd=project, env=env,
                             capture_output=True, text=True, timeout=1200)
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, output
    assert f"app/wf.py:{WORKFLOW_CALL_LINE}:" in output and "RT204" in output, output
    assert "app.util.region" in output, output  # the helper chain shows why a staged helper matters
    assert _git("log", "--format=%s", cwd=project, env=env).splitlines() == ["clean workflow"]

    # The staged-files-only hook is what misses it (why it is not the default).
    staged_only = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--config", "staged-only.yaml"], cwd=project, env=env,
        capture_output=True, text=True, timeout=1200,
    )
    assert staged_only.returncode == 0, staged_only.stdout + staged_only.stderr

    helper.write_text(FIXED_HELPER, encoding="utf-8")
    _git("add", "app/util.py", cwd=project, env=env)
    accepted = subprocess.run(["git", "commit", "-m", "region from input"], cwd=project, env=env,
                              capture_output=True, text=True, timeout=1200)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "replaytest lint" in accepted.stdout + accepted.stderr  # the hook ran (and passed), it was not skipped
    assert _git("log", "--format=%s", cwd=project, env=env).splitlines() == ["region from input", "clean workflow"]


def _hook_environment(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com",
        GIT_CONFIG_NOSYSTEM="1", HOME=str(tmp_path / "home"), NO_COLOR="1",
    )
    (tmp_path / "home").mkdir()
    return env


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_check_hook_blocks_a_commit_of_only_a_prompt_file_that_breaks_a_waiting_run(tmp_path: Path) -> None:
    env = _hook_environment(tmp_path)
    hook_repo = _hook_repository(tmp_path / "hook-repo", env)
    project = write_project(tmp_path / "user-project")  # a dispute agent; one run waits for approval
    (project / ".gitignore").write_text(".replaytest_cache/\n", encoding="utf-8")
    (project / ".pre-commit-config.yaml").write_text(_config("replaytest-check", hook_repo), encoding="utf-8")
    _git("init", "-q", cwd=project, env=env)
    _git("add", ".", cwd=project, env=env)
    _git("commit", "-q", "-m", "dispute agent", cwd=project, env=env)  # before the hook is installed
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=project, env=env, check=True,
                   capture_output=True)

    def commit(message: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "commit", "-m", message], cwd=project, env=env, capture_output=True,
                              text=True, timeout=1200)

    # A notes file only: the hook still runs (a replay may depend on any file) and passes.
    (project / "NOTES.md").write_text("Finance approves credits within three days.\n", encoding="utf-8")
    _git("add", "NOTES.md", cwd=project, env=env)
    noted = commit("notes")
    assert noted.returncode == 0, noted.stdout + noted.stderr
    assert re.search(r"replaytest check \(lint \+ replay\)\.+Passed", noted.stdout + noted.stderr), noted.stderr

    # Only the reply prompt changes: the parked run would draft its reply with a prompt it did not start under.
    prompt = project / "disputes" / "prompts" / "reply.txt"
    prompt.write_text("Reply in one line about invoice {invoice}: credit {credit}.\n", encoding="utf-8")
    _git("add", "disputes/prompts/reply.txt", cwd=project, env=env)
    blocked = commit("shorter replies")
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, output
    assert re.search(r"replaytest check \(lint \+ replay\)\.+Failed", output), output
    assert "dispute-overcharge-waiting.json" in output and "prompt-drift" in output, output
    assert "in-flight runs that break: 1 (1 parked)" in output, output
    assert _git("log", "--format=%s", cwd=project, env=env).splitlines() == ["notes", "dispute agent"]
