"""docs/ci.md ships a GitHub Actions workflow and a deploy-impact job to add under its ``jobs:``: the YAML
parses, has the jobs and steps it promises (lint annotations, SARIF upload, replay gate, the impact report as
step summary and pull-request comment), and every ``replaytest`` command in it parses with our CLI's real
options (a renamed or removed flag fails here, not in a user's pipeline). Every install line of the recipe and
the README names something installable, and the replay job's own commands, run twice on a small project as the
default branch and then a pull request run them, skip the histories the first run recorded green."""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from recipe_kit import HISTORIES, write_project

import replaytest
from replaytest.cli import cli

REPO_ROOT = Path(__file__).resolve().parents[2]
DOC = REPO_ROOT / "docs" / "ci.md"
README = REPO_ROOT / "README.md"
RELEASE_TAG = f"v{replaytest.__version__}"


def _workflow() -> dict[str, Any]:
    """The workflow with the impact job added under ``jobs:``, as the document tells the reader to."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 2, "docs/ci.md should hold one workflow and the impact job to add to it"
    document = yaml.safe_load(blocks[0])
    assert isinstance(document, dict)
    added = yaml.safe_load(blocks[1])
    assert isinstance(added, dict) and set(added) == {"impact"}, "the second block is the impact job alone"
    document["jobs"].update(added)
    return document


def _steps() -> list[dict[str, Any]]:
    return [step for job in _workflow()["jobs"].values() for step in job["steps"]]


def _shell_commands(script: str, shard: int = 1) -> list[list[str]]:
    """The words of each command of a ``run`` script; continued lines joined, ``${{ matrix.shard }}`` the
    given shard, other expressions a placeholder."""
    commands = []
    for line in re.split(r"&&|\n(?!\s*-)", script.replace("\\\n", " ")):
        line = line.replace("${{ matrix.shard }}", str(shard))
        line = re.sub(r"\$\{\{[^}]*\}\}", "REV", line)  # expressions: a placeholder argument
        line = re.split(r"\s(?:>|\|\|)\s", line)[0]  # shell redirection and fallbacks are not ours
        words = shlex.split(line)
        if words:
            commands.append(words)
    return commands


def _replaytest_commands(steps: list[dict[str, Any]] | None = None, shard: int = 1) -> list[list[str]]:
    return [
        words[1:]
        for step in (_steps() if steps is None else steps)
        for words in _shell_commands(step.get("run", ""), shard)
        if words[0] == "replaytest"
    ]


def _parse(arguments: list[str]) -> click.Context:
    """Parse like the real command line does, down to the subcommand, without running anything."""
    name, *rest = arguments
    # With the group's own settings, as the command line makes it: a command keeps the help option it first
    # made, so a context without them would leave "--help" without "-h" in every later help page.
    context = click.Context(cli, info_name="replaytest", **cli.context_settings)
    command = cli.get_command(context, name)
    assert command is not None, f"unknown command {name!r}"
    return command.make_context(name, rest, parent=context)


def test_workflow_triggers_permissions_and_jobs() -> None:
    workflow = _workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers
    assert workflow["permissions"]["security-events"] == "write"
    assert set(workflow["jobs"]) == {"lint", "replay", "impact"}
    for job in workflow["jobs"].values():
        assert job["runs-on"] and job["steps"][0]["uses"].startswith("actions/checkout@")


def test_lint_job_annotates_and_uploads_the_sarif_it_writes() -> None:
    steps = _workflow()["jobs"]["lint"]["steps"]
    runs = " ".join(step.get("run", "") for step in steps)
    assert "replaytest lint --format github" in runs
    written = re.search(r"--format sarif .*?> (\S+)", runs)
    assert written is not None
    upload = next(step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == written.group(1)


def _replay_steps(event: str) -> list[dict[str, Any]]:
    """The replay job's steps that run for ``event`` (``pull_request`` or ``push``), by their ``if``."""
    chosen = []
    for step in _workflow()["jobs"]["replay"]["steps"]:
        condition = str(step.get("if", ""))
        if "github.event_name == 'pull_request'" in condition and event != "pull_request":
            continue
        if "github.event_name != 'pull_request'" in condition and event == "pull_request":
            continue
        chosen.append(step)
    return chosen


def _cache_step(steps: list[dict[str, Any]], action: str) -> dict[str, Any]:
    matching = [step for step in steps if step.get("uses", "").startswith(f"actions/cache/{action}@")]
    assert len(matching) == 1, f"one actions/cache/{action} step expected"
    return matching[0]


def test_replay_job_records_green_replays_on_main_and_pull_requests_only_restore_them() -> None:
    steps = _workflow()["jobs"]["replay"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0  # --diff-base, when added to the pull-request gate, needs history
    assert not any(step.get("uses", "").startswith("actions/cache@") for step in steps)  # it restores and saves
    main, pull_request = _replay_steps("push"), _replay_steps("pull_request")
    saved, restored = _cache_step(main, "save"), _cache_step(pull_request, "restore")
    assert not any(step.get("uses", "").startswith("actions/cache/restore@") for step in main)  # main trusts none
    assert not any(step.get("uses", "").startswith("actions/cache/save@") for step in pull_request)
    assert saved["with"]["path"] == restored["with"]["path"] == ".replaytest_cache"  # the default cache-dir
    assert saved["with"]["key"].startswith(restored["with"]["restore-keys"])  # a pull request finds main's entry
    for commands in (_replaytest_commands(main), _replaytest_commands(pull_request)):
        assert [words[0] for words in commands] == ["check"] and "--output-format" in commands[0]
        assert "--no-cache" not in commands[0]  # a run that neither reads nor writes keeps the cache empty


def test_replay_job_is_a_four_way_shard_matrix_with_a_cache_entry_per_shard() -> None:
    job = _workflow()["jobs"]["replay"]
    assert job["strategy"]["matrix"]["shard"] == [1, 2, 3, 4] and job["strategy"]["fail-fast"] is False
    main, pull_request = _replay_steps("push"), _replay_steps("pull_request")
    for shard in (1, 2, 3, 4):
        for commands in (_replaytest_commands(main, shard), _replaytest_commands(pull_request, shard)):
            [words] = commands
            assert words[words.index("--shard") + 1] == f"{shard}/4"
    # main's shard I saves, and the pull request's shard I restores, an entry of that shard alone.
    saved, restored = _cache_step(main, "save"), _cache_step(pull_request, "restore")
    for key in (saved["with"]["key"], restored["with"]["key"], restored["with"]["restore-keys"]):
        assert "-shard${{ matrix.shard }}of4-" in key
    uploads = [step for step in main if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert [step["with"]["name"] for step in uploads] == ["replay-coverage-${{ matrix.shard }}"]  # one per shard


@pytest.mark.slow  # sixteen check runs in subprocesses, four under coverage
def test_the_replay_jobs_commands_skip_on_a_pull_request_what_main_replayed_green(tmp_path: Path) -> None:
    """The replay job's own commands from docs/ci.md, in the order CI runs them, on each of the four shard
    machines: main's (coverage: replays all of its share, records), then a pull request's shard I against the
    folder main's shard I left behind (the cache entry of its own shard, as the recipe's keys restore)."""
    project = write_project(tmp_path / "project")
    cache = project / ".replaytest_cache"
    machines = tmp_path / "machines"

    def run(words: list[str], code: int = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "replaytest", *words], cwd=project, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == code, done.stdout + done.stderr
        return done

    def taken(output: str, shard: int) -> int:
        found = re.search(rf"^shard {shard}/4: (\d+) of {len(HISTORIES)} histories \(split by content digest\)$",
                          output, flags=re.M)
        assert found is not None, output
        return int(found.group(1))

    shares = {}
    for shard in (1, 2, 3, 4):
        [main] = _replaytest_commands(_replay_steps("push"), shard)
        for _ in range(2):  # coverage needs every history: main's run never skips, whatever the cache holds
            output = run(main).stderr
            assert "skipped" not in output and f"coverage of shard {shard}/4's histories only" in output, output
        shares[shard] = taken(output, shard)
        if shares[shard]:
            assert "invoice_dispute" in output, output  # its coverage table
            assert list((cache / "replay").glob("passed*.json")) == [cache / "replay" / f"passed.shard-{shard}-of-4.json"]
        shutil.move(str(cache), machines / str(shard))
    assert sum(shares.values()) == len(HISTORIES)  # the four shards took each history once

    def pull_request(shard: int, code: int = 0) -> subprocess.CompletedProcess[str]:
        if cache.exists():
            shutil.rmtree(cache)
        shutil.copytree(machines / str(shard), cache)  # actions/cache/restore of this shard's entry
        [words] = _replaytest_commands(_replay_steps("pull_request"), shard)
        return run(words, code)

    for shard in (1, 2, 3, 4):
        output = pull_request(shard).stderr
        assert taken(output, shard) == shares[shard]
        if shares[shard]:
            assert f"skipped {shares[shard]} histories that replayed green before" in output, output
        else:
            assert "skipped" not in output, output

    # A pull request that edits the reply prompt a waiting run will use replays it again, in its shard.
    prompt = project / "disputes" / "prompts" / "reply.txt"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "Thank them for their patience.\n", encoding="utf-8")
    waiting = _shard_of(project / "histories" / "dispute-overcharge-waiting.json")
    for shard in (1, 2, 3, 4):
        done = pull_request(shard, code=1 if shard == waiting else 0)
        assert "skipped" not in done.stderr or shard != waiting
        if shard == waiting:
            assert "dispute-overcharge-waiting.json" in done.stdout and "prompt-drift" in done.stdout


def _shard_of(history: Path) -> int:
    """The documented split, worked out here: SHA-256 of the file's bytes, first 8 bytes big-endian, mod 4, plus 1."""
    return int(hashlib.sha256(history.read_bytes()).hexdigest()[:16], 16) % 4 + 1


# Where an install line may take a package from. A path is the project's own code. A direct reference must
# be a VCS URL pinned to a commit (40 hex digits) or to the release tag (v<version>, see the README's
# Releasing section): an unpinned URL installs whatever the branch holds that day. A bare name must be a
# dependency replaytest itself declares (those exist on the index: pip resolves them for every install);
# never replaytest, whose name on the index is not this project's.
PINNED_REV = re.compile(rf"@(?:[0-9a-f]{{40}}|{re.escape(RELEASE_TAG)})$")


def _not_installable(target: str) -> str | None:
    """Why an install target breaks the rule above; None when it keeps it."""
    if target.startswith((".", "/")):
        return None
    name, at, url = (part.strip() for part in target.partition(" @ "))
    if at:
        if not url.startswith("git+https://"):
            return f"{target}: a direct reference other than a git URL"
        if not PINNED_REV.search(url):
            return f"{target}: the git URL is pinned to neither a commit nor {RELEASE_TAG}"
        return None
    bare = re.split(r"[\[<>=!~; ]", name, maxsplit=1)[0].lower()
    declared = {re.split(r"[\[<>=!~; ]", dependency, maxsplit=1)[0].lower()
                for dependency in _declared_dependencies()}
    if bare == "replaytest" or bare not in declared:
        return f"{target}: a bare name that is not a dependency replaytest declares"
    return None


def _declared_dependencies() -> list[str]:
    """What replaytest's metadata requires, extras included (``name>=x; extra == "test"``)."""
    return importlib.metadata.requires("replaytest") or []


def _install_targets(text: str) -> list[str]:
    """The targets of every ``pip install`` in ``text``'s code (fenced blocks, inline spans, YAML ``run``)."""
    code = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S) + re.findall(r"`([^`\n]+)`", text)
    targets = []
    for line in (line for snippet in code for line in snippet.splitlines() if "pip install" in line):
        line = re.sub(r"^\s*-?\s*run:\s*", "", line)  # a YAML step's command
        for words in _shell_commands(line.split("#")[0]):  # a comment after the command is not a target
            if "install" in words and words[words.index("install") - 1] == "pip":
                after = words[words.index("install") + 1:]
                targets.extend(word for word in after if not word.startswith("-"))
    return targets


def test_every_install_line_of_the_recipe_and_the_readme_names_something_installable() -> None:
    recipe = _install_targets(DOC.read_text(encoding="utf-8"))
    readme = _install_targets(README.read_text(encoding="utf-8"))
    # The recipe installs replaytest in each job; the README from a checkout and from a pinned URL.
    assert sum("replaytest" in target for target in recipe) == 3, recipe
    assert any(target.startswith("replaytest[") for target in readme) and "." in readme, readme
    problems = [problem for target in recipe + readme if (problem := _not_installable(target))]
    assert problems == []
    # The pre-commit hooks install the hook repository itself, at the rev the user pins; nothing else.
    hooks = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert [hook.get("additional_dependencies") for hook in hooks] == [None] * len(hooks)


@pytest.mark.parametrize("target", [
    "replaytest",
    "replaytest[temporal]",
    "replaytest @ git+https://example.com/o/replaytest.git",
    "replaytest @ git+https://example.com/o/replaytest.git@main",
    "replaytest @ https://example.com/replaytest-0.1.0.tar.gz",
    "left-pad",
])
def test_the_install_rule_rejects_an_unpinned_or_unclaimed_name(target: str) -> None:
    """Guard: the rule above must fail on the install lines it exists to catch."""
    assert _not_installable(target) is not None


def test_the_install_line_finder_sees_a_bare_install_in_a_run_step() -> None:
    assert _install_targets("```yaml\n- run: python -m pip install -q -e . replaytest\n```\n") == [".", "replaytest"]
def test_every_replaytest_command_parses() -> None:
    commands = _replaytest_commands()
    assert {words[0] for words in commands} == {"lint", "check", "impact"}
    for words in commands:
        _parse(words)


def test_impact_job_posts_the_markdown_report_and_gates_on_in_flight_runs() -> None:
    job = _workflow()["jobs"]["impact"]
    assert job["if"] == "github.event_name == 'pull_request'"
    assert job["permissions"]["pull-requests"] == "write"
    assert job["steps"][0]["with"]["fetch-depth"] == 0  # the guards' base revision needs history
    runs = [step.get("run", "") for step in job["steps"]]
    report = next(run for run in runs if "replaytest impact" in run)
    assert "--output-format markdown > impact.md" in report and "--in-flight-only" in report
    assert '>> "$GITHUB_STEP_SUMMARY"' in report
    assert any("gh pr comment" in run and "--body-file impact.md" in run for run in runs)
    assert runs[-1] == "exit ${{ steps.impact.outputs.exit }}"


def test_the_parse_check_rejects_a_misspelt_flag() -> None:
    """Guard: the check above must fail on an option our CLI lacks."""
    with pytest.raises(click.UsageError):
        _parse(["check", "--output-fromat", "github", "."])


def test_the_recipe_lints_once_not_in_every_shard_job() -> None:
    """Each lint finding is annotated once: the lint job lints, every `check` of the replay matrix has
    --no-lint (without it each of the N shard jobs would lint the whole tree and annotate every finding again)."""
    jobs = _workflow()["jobs"]
    linting = {name for name, job in jobs.items()
               for words in _replaytest_commands(job["steps"]) if words[0] == "lint"}
    assert linting == {"lint"}
    checks = [words for words in _replaytest_commands(jobs["replay"]["steps"]) if words[0] == "check"]
    assert checks and all("--no-lint" in words for words in checks), checks
