"""The conventions users carry over from ruff: the ``extend-*`` keys, ``fixable``/``unfixable``, ``lint --fix``
with ``--show-fixes``, ``--statistics``, ``--output-file``, one file from stdin (``-`` with ``--stdin-filename``),
the file-level ``# replaytest: noqa``, ``replaytest clean``, and a lint that errors never saying it passed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lintkit import findings, line_of, run_replaytest

# A support-ticket triage agent with one clock, one uuid and one random finding, each with a safe fix.
TRIAGE = '''\
"""A support-ticket triage agent: stamps the ticket, names its follow-up and schedules it."""
import random
import time
import uuid
from datetime import timedelta

from temporalio import workflow


@workflow.defn
class TicketTriage:
    @workflow.run
    async def run(self, ticket: str) -> dict:
        received_at = time.time()
        follow_up_id = str(uuid.uuid4())
        # Spread the follow-ups over the day so reviewers are not flooded at once.
        delay_minutes = random.randint(5, 90)
        await workflow.sleep(timedelta(minutes=delay_minutes))
        return {"ticket": ticket, "received_at": received_at, "follow_up": follow_up_id}
'''
CLOCK_LINE = line_of(TRIAGE, "time.time()")
UUID_LINE = line_of(TRIAGE, "uuid.uuid4()")
RANDOM_LINE = line_of(TRIAGE, "random.randint")

# A billing workflow of the same project with one clock read.
BILLING = '''\
"""Monthly invoicing: closes the period at the time the run starts."""
from datetime import datetime

from temporalio import workflow


@workflow.defn
class CloseBillingPeriod:
    @workflow.run
    async def run(self, account: str) -> str:
        return f"{account} closed at {datetime.now()}"
'''
BILLING_LINE = line_of(BILLING, "datetime.now()")

TRIAGE_PATH = "support/triage.py"
CLOCK = (TRIAGE_PATH, CLOCK_LINE, "clock")
UUID = (TRIAGE_PATH, UUID_LINE, "uuid")
RANDOM = (TRIAGE_PATH, RANDOM_LINE, "random")
BILLING_CLOCK = ("support/billing.py", BILLING_LINE, "clock")


def _project(make_project, pyproject: str = "[tool.replaytest]\n", triage: str = TRIAGE) -> Path:
    return make_project({TRIAGE_PATH: triage, "support/billing.py": BILLING}, pyproject=pyproject)


def _lint(project: Path, *options: str):
    return run_replaytest("lint", "--format", "json", "--no-cache", *options, ".", cwd=project)


def _config_error(run, *names: str) -> None:
    assert run.returncode == 2, run.describe()
    assert "Traceback" not in run.stderr, run.describe()
    for name in names:
        assert name in run.stderr, f"{name!r} not named in the error\n{run.describe()}"


# --- the extend-* keys ------------------------------------------------------------------------------


def test_extend_select_adds_to_select(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nselect = ["clock"]\nextend-select = ["RT103"]\n')
    assert findings(_lint(project).json()) == {CLOCK, UUID, BILLING_CLOCK}


def test_extend_select_without_select_extends_the_default_of_every_rule(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nextend-select = ["uuid"]\n')
    assert findings(_lint(project).json()) == {CLOCK, UUID, RANDOM, BILLING_CLOCK}


def test_command_line_select_replaces_select_and_extend_select_as_in_ruff(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nselect = ["clock"]\nextend-select = ["uuid"]\n')
    assert findings(_lint(project, "--select", "random").json()) == {RANDOM}


def test_extend_ignore_adds_to_ignore(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nignore = ["clock"]\nextend-ignore = ["RT103"]\n')
    assert findings(_lint(project).json()) == {RANDOM}


def test_extend_exclude_adds_to_exclude(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nexclude = ["docs"]\nextend-exclude = ["support/triage.py"]\n')
    assert findings(_lint(project).json()) == {BILLING_CLOCK}


def test_extend_per_file_ignores_adds_to_the_same_glob_and_new_ones(make_project) -> None:
    project = _project(make_project, '''\
        [tool.replaytest.per-file-ignores]
        "support/*" = ["clock"]
        [tool.replaytest.extend-per-file-ignores]
        "support/*" = ["uuid"]
        "support/billing.py" = ["RT101"]
        ''')
    assert findings(_lint(project).json()) == {RANDOM}


def test_an_unknown_code_in_an_extend_key_is_exit_2(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nextend-ignore = ["clocks"]\n')
    _config_error(_lint(project), "'clocks'", "pyproject.toml")


def test_a_misspelt_key_names_the_nearest_one(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nextend-selct = ["uuid"]\n')
    _config_error(_lint(project), "extend-selct", "did you mean extend-select?")


def test_an_empty_frameworks_list_is_a_configuration_error(make_project) -> None:
    project = _project(make_project, "[tool.replaytest]\nframeworks = []\n")
    run = _lint(project)
    _config_error(run, "[tool.replaytest] frameworks: is an empty list", "remove the key")


# --- fixable / unfixable, lint --fix, --show-fixes ------------------------------------------------------


def test_unfixable_keeps_those_fixes_out_of_fix(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nunfixable = ["uuid"]\n')
    run = run_replaytest("fix", "--no-cache", TRIAGE_PATH, cwd=project)
    assert run.returncode == 1, run.describe()  # the uuid finding remains
    fixed = (project / TRIAGE_PATH).read_text(encoding="utf-8")
    assert "received_at = workflow.time()" in fixed
    assert "delay_minutes = workflow.random().randint(5, 90)" in fixed
    assert "follow_up_id = str(uuid.uuid4())" in fixed
    assert "Fixed 2 finding(s) in 1 file(s); 1 remaining." in run.stdout


def test_fixable_limits_fix_to_the_rules_it_names(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nfixable = ["RT101"]\n')
    run = run_replaytest("fix", "--no-cache", TRIAGE_PATH, cwd=project)
    assert run.returncode == 1, run.describe()
    fixed = (project / TRIAGE_PATH).read_text(encoding="utf-8")
    assert "received_at = workflow.time()" in fixed
    assert "random.randint(5, 90)" in fixed and "workflow.random()" not in fixed
    assert "uuid.uuid4()" in fixed


def test_an_unknown_code_in_unfixable_is_exit_2(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nunfixable = ["RT999"]\n')
    _config_error(run_replaytest("fix", "--no-cache", ".", cwd=project), "unfixable", "RT999")


def test_lint_fix_is_fix_and_show_fixes_lists_them_per_file_and_rule(make_project) -> None:
    project = _project(make_project)
    run = run_replaytest("lint", "--fix", "--show-fixes", "--no-cache", ".", cwd=project)
    # billing's datetime.now() is naive local time: its fix is unsafe, so it remains without --unsafe-fixes.
    assert run.returncode == 1, run.describe()
    assert run.stdout.splitlines()[-6:] == [
        "Fixed 3 finding(s) in 1 file(s); 1 remaining.",
        "Fixed 3 findings:",
        "- support/triage.py:",
        "    1 × RT101",
        "    1 × RT102",
        "    1 × RT103",
    ], run.describe()
    assert findings(_lint(project).json()) == {BILLING_CLOCK}


def test_lint_fix_with_unsafe_fixes_applies_the_unsafe_ones_too(make_project) -> None:
    project = _project(make_project)
    run = run_replaytest("lint", "--fix", "--unsafe-fixes", "--no-cache", "support/billing.py", cwd=project)
    assert run.returncode == 0, run.describe()
    assert 'return f"{account} closed at {workflow.now().replace(tzinfo=None)}"' in (
        project / "support/billing.py").read_text(encoding="utf-8")


def test_unsafe_fixes_without_fix_is_a_usage_error(make_project) -> None:
    project = _project(make_project)
    run = run_replaytest("lint", "--unsafe-fixes", "--no-cache", ".", cwd=project)
    _config_error(run, "--unsafe-fixes")
    assert (project / TRIAGE_PATH).read_text(encoding="utf-8") == TRIAGE


# --- --statistics, --output-file ------------------------------------------------------------------------


def test_statistics_prints_one_line_per_rule_most_frequent_first(make_project) -> None:
    project = _project(make_project)
    run = run_replaytest("lint", "--statistics", "--no-cache", ".", cwd=project)
    assert run.returncode == 1, run.describe()
    # RT101 has no [*]: billing's datetime.now() has only an unsafe fix, which `fix` does not apply.
    assert run.stdout.splitlines() == [
        "2\tRT101\treads-wall-clock",
        "1\tRT102\t[*] draws-unrecorded-randomness",
        "1\tRT103\t[*] creates-fresh-uuid",
    ]


def test_statistics_as_json(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nselect = ["clock"]\n')
    run = run_replaytest("lint", "--statistics", "--format", "json", "--no-cache", ".", cwd=project)
    assert json.loads(run.stdout) == [{"code": "RT101", "name": "reads-wall-clock", "count": 2, "fixable": False}]


def test_statistics_marks_a_rule_whose_every_finding_has_a_safe_fix(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nselect = ["clock"]\n')
    run = run_replaytest("lint", "--statistics", "--no-cache", TRIAGE_PATH, cwd=project)
    assert run.stdout == "1\tRT101\t[*] reads-wall-clock\n"


def test_output_file_receives_the_report_and_stdout_stays_empty(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\nselect = ["uuid"]\n')
    run = run_replaytest("lint", "--no-cache", "--output-file", "reports/lint.txt", ".", cwd=project)
    assert run.returncode == 1, run.describe()
    assert run.stdout == ""
    assert (project / "reports/lint.txt").read_text(encoding="utf-8") == (
        f"support/triage.py:{UUID_LINE}:28: RT103 uuid.uuid4() creates a fresh UUID in workflow code; "
        "use workflow.uuid4()\n"
        "    fix (safe): workflow.uuid4()\n"
        "Found 1 finding (2 files checked); 1 fixable with `replaytest fix`.\n"
    )


# --- one file from stdin ----------------------------------------------------------------------------------


def _lint_stdin(project: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "replaytest", "lint", "--no-cache", "--format", "json", *args],
                          cwd=project, input=source, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


def test_stdin_is_linted_as_the_file_it_names_even_where_no_file_is(make_project) -> None:
    project = _project(make_project, '[tool.replaytest.per-file-ignores]\n"support/new_*.py" = ["random"]\n')
    run = _lint_stdin(project, TRIAGE, "-", "--stdin-filename", "support/new_triage.py")
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    assert findings(report) == {("support/new_triage.py", CLOCK_LINE, "clock"),
                                ("support/new_triage.py", UUID_LINE, "uuid")}
    assert report["summary"]["files"] == 1


def test_stdin_text_wins_over_the_file_on_disk(make_project) -> None:
    project = _project(make_project)
    edited = BILLING.replace("datetime.now()", "workflow.now()")
    run = _lint_stdin(project, edited, "--stdin-filename", "support/billing.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["diagnostics"] == []


def test_stdin_without_a_filename_is_a_usage_error(make_project) -> None:
    project = _project(make_project)
    run = _lint_stdin(project, TRIAGE, "-")
    assert run.returncode == 2
    assert "needs --stdin-filename" in run.stderr


# --- the file-level # replaytest: noqa ---------------------------------------------------------------------


def test_a_bare_file_level_noqa_exempts_the_whole_file(make_project) -> None:
    project = _project(make_project, triage=TRIAGE.replace('"""\nimport random', '"""\n# replaytest: noqa\nimport random'))
    run = _lint(project)
    assert run.returncode == 1, run.describe()
    assert findings(run.json()) == {BILLING_CLOCK}  # no RT003: an exemption is never reported unused, as in ruff


def test_a_file_level_noqa_with_codes_exempts_those_codes_in_the_whole_file(make_project) -> None:
    triage = TRIAGE.replace('"""\nimport random', '"""\n# replaytest: noqa: RT101, uuid\nimport random')
    project = _project(make_project, triage=triage)
    assert findings(_lint(project).json()) == {(TRIAGE_PATH, RANDOM_LINE + 1, "random"), BILLING_CLOCK}


def test_an_unknown_code_in_a_file_level_noqa_is_exit_2_naming_the_line(make_project) -> None:
    triage = TRIAGE.replace('"""\nimport random', '"""\n# replaytest: noqa: RT999\nimport random')
    run = _lint(_project(make_project, triage=triage))
    _config_error(run, "support/triage.py:2:", "'RT999'")


# --- errors are never "All checks passed"; replaytest clean ---------------------------------------------


def test_a_lint_with_errors_and_no_findings_does_not_say_it_passed(make_project) -> None:
    project = _project(make_project)
    run = run_replaytest("lint", "--no-cache", "missing_folder", cwd=project)
    assert run.returncode == 2
    assert "All checks passed" not in run.stdout
    assert run.stdout == "No findings (0 files checked); 1 error occurred (printed above), so the check failed.\n"
    assert "missing_folder: no such file or directory" in run.stderr


def test_clean_removes_the_cache_folder_replaytest_made(make_project) -> None:
    project = _project(make_project)
    run_replaytest("lint", ".", cwd=project)
    assert (project / ".replaytest_cache" / "README").is_file()
    run = run_replaytest("clean", cwd=project)
    assert run.returncode == 0, run.describe()
    assert not (project / ".replaytest_cache").exists()
    again = run_replaytest("clean", cwd=project)
    assert again.returncode == 0 and "nothing to remove" in again.stdout


def test_clean_refuses_a_folder_that_is_not_replaytests(make_project) -> None:
    project = _project(make_project, '[tool.replaytest]\ncache-dir = "support"\n')
    run = run_replaytest("clean", cwd=project)
    assert run.returncode == 2
    assert "not replaytest's cache folder; nothing was deleted" in run.stderr
    assert (project / TRIAGE_PATH).read_text(encoding="utf-8") == TRIAGE


def test_a_file_level_noqa_after_code_is_ignored_with_a_warning_as_ruff_ignores_one(make_project) -> None:
    """ruff warns about a ``# ruff: noqa`` after code and ignores it; so does replaytest with its own: the
    comment suppresses nothing (not the file, not the line, codes or not) and the findings decide the exit."""
    warning = (f"warning: support/triage.py:{CLOCK_LINE}: unexpected `# replaytest: noqa` after code, ignored: "
               "a file-level exemption must stand on a line of its own")
    for comment in ("# replaytest: noqa", "# replaytest: noqa: RT101", "# replaytest: noqa: RT999"):
        triage = TRIAGE.replace("received_at = time.time()", f"received_at = time.time()  {comment}")
        project = _project(make_project, triage=triage)
        run = _lint(project)
        assert run.returncode == 1, run.describe()  # findings, not an error: an unknown code in it is ignored too
        assert warning in run.stderr and "error" not in run.stderr, run.describe()
        assert findings(run.json()) == {CLOCK, UUID, RANDOM, BILLING_CLOCK}
    # With nothing to find, the warning alone exits 0.
    clean = TRIAGE.replace("received_at = time.time()", "received_at = 0.0  # replaytest: noqa")
    run = run_replaytest("lint", "--no-cache", "--select", "clock", TRIAGE_PATH, cwd=_project(make_project, triage=clean))
    assert run.returncode == 0, run.describe()
    assert warning in run.stderr and "All checks passed" in run.stdout, run.describe()
