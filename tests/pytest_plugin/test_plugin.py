"""The replaytest pytest plugin: collection, node ids, selection, outcomes, options, summary, xdist,
the ``replay_history`` fixture and marker. Projects are built from the example agent and its recorded
histories."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AGENT = (REPO / "fixtures/journal_app/agent.py").read_text()
HISTORY_NAMES = sorted(p.name for p in (REPO / "fixtures/histories").glob("*.json"))
INI = """
[tool.pytest.ini_options]
testpaths = ["tests"]
replay_paths = ["histories"]
replay_workflows = ["shop.agent:support_agent"]
"""


def make_project(pytester: pytest.Pytester, ini: str = INI, agent: str = AGENT, histories: str = "histories") -> Path:
    root = pytester.path
    (root / "shop").mkdir()
    (root / "shop/__init__.py").write_text("")
    (root / "shop/agent.py").write_text(agent)
    shutil.copytree(REPO / "fixtures/histories", root / histories)
    (root / "tests").mkdir()
    (root / "tests/test_unit.py").write_text("def test_unit():\n    assert True\n")
    (root / "pyproject.toml").write_text(ini)
    return root


def history_ids(prefix: str = "histories") -> list[str]:
    return [f"{prefix}/{name}::replay" for name in HISTORY_NAMES]


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line and not line.startswith(("=", "FAILED", "ERROR"))]


def test_histories_are_collected_sorted_with_their_path_in_the_node_id(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    result = pytester.runpytest("--collect-only", "-q")
    assert collected(result) == ["tests/test_unit.py::test_unit", *history_ids()]


def test_default_run_replays_histories_along_with_tests_once_each(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*= replaytest =*", "replayed 3 histories: 3 passed, 0 diverged, 0 stale", "prompt drift: 0 warning(s)"])


@pytest.mark.slow
def test_no_double_collection_when_the_histories_are_also_named(pytester: pytest.Pytester) -> None:
    make_project(pytester, ini=INI.replace('testpaths = ["tests"]\n', ""))
    # Invocation dir (".") already covers histories/; naming the folder as well must not add it twice.
    assert collected(pytester.runpytest("--collect-only", "-q")) == [*history_ids(), "tests/test_unit.py::test_unit"]
    assert collected(pytester.runpytest("--collect-only", "-q", "histories")) == history_ids()


def test_explicit_arguments_run_only_what_they_name(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    assert collected(pytester.runpytest("--collect-only", "-q", "tests")) == ["tests/test_unit.py::test_unit"]
    one = f"histories/{HISTORY_NAMES[0]}"
    assert collected(pytester.runpytest("--collect-only", "-q", one)) == [f"{one}::replay"]


def test_running_from_a_subdirectory_runs_only_that_subdirectory(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(pytester.path / "tests")
        assert collected(pytester.runpytest("--collect-only", "-q")) == ["tests/test_unit.py::test_unit"]


def test_a_run_without_arguments_from_the_rootdir_adds_replay_paths_outside_it(pytester: pytest.Pytester) -> None:
    # No testpaths: pytest's arguments come from the invocation directory, an ``ArgsSource`` member spelt
    # INCOVATION_DIR up to pytest 7.4 and INVOCATION_DIR since 8.0; on either, the run is the project's and
    # histories outside the rootdir's tree are added; from a subdirectory they are not.
    make_project(pytester, ini=INI.replace('testpaths = ["tests"]\n', "").replace('"histories"', '"../shared"'),
                 histories="../shared")
    assert [line.rsplit("/", 1)[-1] for line in collected(pytester.runpytest("--collect-only", "-q"))] == [
        "test_unit.py::test_unit", *(f"{name}::replay" for name in HISTORY_NAMES)]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(pytester.path / "tests")
        assert collected(pytester.runpytest("--collect-only", "-q")) == ["tests/test_unit.py::test_unit"]


def test_keyword_selection(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    result = pytester.runpytest("-k", "refund", "--collect-only", "-q")
    assert collected(result) == [i for i in history_ids() if "refund" in i]


def test_nothing_configured_means_nothing_happens(pytester: pytest.Pytester) -> None:
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests/test_unit.py").write_text("def test_unit():\n    pass\n")
    shutil.copytree(REPO / "fixtures/histories", pytester.path / "histories")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "= replaytest =" not in result.stdout.str()


def test_conventional_folder_is_used_only_when_code_is_configured(pytester: pytest.Pytester) -> None:
    make_project(pytester, ini="[tool.pytest.ini_options]\n", histories="fixtures/histories")
    assert collected(pytester.runpytest("--collect-only", "-q")) == ["tests/test_unit.py::test_unit"]
    (pytester.path / "pyproject.toml").write_text(
        '[tool.replaytest.replay]\nworkflows = ["shop.agent:support_agent"]\n'
    )
    assert collected(pytester.runpytest("--collect-only", "-q")) == [
        *history_ids("fixtures/histories"),
        "tests/test_unit.py::test_unit",
    ]


def test_project_configuration_supplies_paths_and_workflows(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        ini='[tool.pytest.ini_options]\ntestpaths = ["tests"]\n\n[tool.replaytest.replay]\n'
        'paths = ["histories"]\nworkflows = ["shop.agent:support_agent"]\n',
    )
    pytester.runpytest().assert_outcomes(passed=4)


def test_a_divergence_fails_with_the_plain_report_and_a_hint(pytester: pytest.Pytester) -> None:
    make_project(pytester, agent=AGENT.replace('ctx.step("fetch orders"', 'ctx.step("load orders"'))
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*histories/support_agent-question.json: support_agent id ticket-question: diverged (4 recorded events), "
            "finished run (completed)",
            "  command-mismatch at event #2: the code issued step 'load orders' where the history recorded step 'fetch orders'",
            "    at        shop/agent.py:*in support_agent",
            "replayed 3 histories: 0 passed, 3 diverged, 0 stale",
            "in-flight runs that break: 1 (1 parked)",
            "finished runs that diverge: 2 (2 completed)",
            "next: replaytest replay histories/support_agent-question.json --details --workflows shop.agent:support_agent",
        ]
    )
    assert "Traceback" not in result.stdout.str()


@pytest.mark.slow
def test_stale_history_fails_by_default_and_can_be_skipped(pytester: pytest.Pytester) -> None:
    make_project(pytester, agent=AGENT.replace('name="support_agent"', 'name="helpdesk_agent"'))
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(["*no current code for workflow type 'support_agent'; known types: helpdesk_agent*"])
    result.stdout.fnmatch_lines(["replayed 3 histories: 0 passed, 0 diverged, 3 stale"])
    skipped = pytester.runpytest("--replay-stale=skip", "-rs")
    skipped.assert_outcomes(passed=1, skipped=3)
    skipped.stdout.fnmatch_lines(["replayed 3 histories: 0 passed, 0 diverged, 3 stale"])
    (pytester.path / "pyproject.toml").write_text(INI + 'replay_stale = "skip"\n')
    pytester.runpytest().assert_outcomes(passed=1, skipped=3)


@pytest.mark.slow
def test_prompt_drift_warns_by_default_and_fails_with_the_option_or_ini(pytester: pytest.Pytester) -> None:
    reworded = AGENT.replace("Write a short, friendly reply", "Write a warm reply")
    make_project(pytester, agent=reworded)
    result = pytester.runpytest()
    # The example passes the rendered prompt to the model, so its arguments changed too. The parked run
    # has not reached the writer prompt yet: it will use the new one when it resumes (prompts-pending).
    result.assert_outcomes(passed=3, failed=1, warnings=4)
    result.stdout.fnmatch_lines(
        [
            "*prompt-drift at event #3: the parked run has not reached these prompts yet (it resumes at signal"
            " 'approved'): will use writer sha256:*,"
            " started under sha256:*",
            "*shop/agent.py:*: ReplayWarning: prompt-drift at event #3 of histories/support_agent-question.json: "
            "model 'write reply' now uses prompt version*",
            '    reply = ctx.model("write reply"*',
            "prompt drift: 2 warning(s)",
            "args-mismatch: 2 warning(s)*",
        ]
    )
    pytester.runpytest("--replay-prompts-pending=warn").assert_outcomes(passed=4, warnings=5)
    pytester.runpytest("--replay-prompts=fail").assert_outcomes(passed=1, failed=3)
    (pytester.path / "pyproject.toml").write_text(INI + 'replay_prompts = "fail"\n')
    pytester.runpytest().assert_outcomes(passed=1, failed=3)
    (pytester.path / "pyproject.toml").write_text(INI + 'replay_prompts = "ignore"\nreplay_prompts_pending = "ignore"\n')
    pytester.runpytest().assert_outcomes(passed=4)


@pytest.mark.slow
def test_strict_args_option_and_ini(pytester: pytest.Pytester) -> None:
    changed = AGENT.replace('ctx.step("fetch orders", fetch_orders, ticket["customer"])', 'ctx.step("fetch orders", fetch_orders, ticket["customer"].upper())')
    make_project(pytester, agent=changed)
    result = pytester.runpytest()
    result.assert_outcomes(passed=4, warnings=3)
    result.stdout.fnmatch_lines(["args-mismatch: 3 warning(s)*"])
    pytester.runpytest("--replay-strict-args").assert_outcomes(passed=1, failed=3)
    (pytester.path / "pyproject.toml").write_text(INI + "replay_strict_args = true\n")
    pytester.runpytest().assert_outcomes(passed=1, failed=3)


def test_details_option_widens_the_context(pytester: pytest.Pytester) -> None:
    make_project(pytester, agent=AGENT.replace('ctx.step("email customer"', 'ctx.step("mail customer"'))
    short = pytester.runpytest("-k", "approved").stdout.str()
    long = pytester.runpytest("-k", "approved", "--replay-details").stdout.str()
    assert "#1 model 'plan'" not in short  # two events either side by default
    assert "#1 model 'plan'" in long


def test_last_failed_reruns_only_the_diverging_history(pytester: pytest.Pytester) -> None:
    make_project(pytester, agent=AGENT.replace('"issue refund"', '"refund"'))
    pytester.runpytest("-p", "cacheprovider").assert_outcomes(passed=3, failed=1)
    again = pytester.runpytest("-p", "cacheprovider", "--lf", "-v")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*histories/support_agent-refund-approved.json::replay FAILED*"])


def test_workflows_from_a_hook(pytester: pytest.Pytester) -> None:
    make_project(pytester, ini='[tool.pytest.ini_options]\ntestpaths = ["tests"]\nreplay_paths = ["histories"]\n')
    (pytester.path / "conftest.py").write_text(
        "def pytest_replaytest_workflows(config):\n"
        "    from shop.agent import support_agent\n"
        "    return [support_agent]\n"
    )
    pytester.runpytest().assert_outcomes(passed=4)


def test_a_malformed_history_fails_naming_the_file_and_json_path(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    (pytester.path / "histories/zz-broken.json").write_text(
        '{"format": "replaytest-history", "format_version": 1, "workflow": {"type": "support_agent", "id": 7}, "status": "completed", "events": []}'
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*zz-broken.json*$.workflow.id*expected a string*", "replayed 4 histories: 3 passed, 0 diverged, 0 stale, 1 error"])


def test_every_json_under_the_replay_paths_is_an_item_but_blob_stores_are_not(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    # Not a history: collected, and fails with the reason when run (never left out silently).
    (pytester.path / "histories/notes.json").write_text('{"not": "a history"}')
    # Blob stores beside histories hold payloads, even ones that quote a history.
    (pytester.path / "histories/blobs").mkdir()
    (pytester.path / "histories/blobs/quoted.json").write_text('{"format": "replaytest-history", "partial": true}')
    assert collected(pytester.runpytest("--collect-only", "-q", "histories")) == sorted(
        [*history_ids(), "histories/notes.json::replay"])


@pytest.mark.slow
def test_xdist_merges_the_summary_on_the_controller(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    make_project(pytester, agent=AGENT.replace('"issue refund"', '"refund"'))
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["replayed 3 histories: 2 passed, 1 diverged, 0 stale", "next: replaytest replay histories/support_agent-refund-approved.json*"])


@pytest.mark.slow
def test_xdist_merges_the_run_status_split_on_the_controller(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    make_project(pytester, agent=AGENT.replace('ctx.step("fetch orders"', 'ctx.step("load orders"'))
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines([
        "replayed 3 histories: 0 passed, 3 diverged, 0 stale",
        "in-flight runs that break: 1 (1 parked)",
        "finished runs that diverge: 2 (2 completed)",
    ])


def test_replay_history_fixture_and_marker(pytester: pytest.Pytester) -> None:
    make_project(pytester, ini='[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n')
    (pytester.path / "tests/test_replays.py").write_text(
        "import pytest\n"
        "from shop.agent import support_agent\n"
        "\n"
        "def test_fixture(replay_history):\n"
        "    result = replay_history('histories/support_agent-question.json', workflows=[support_agent])\n"
        "    assert result.status == 'passed' and result.workflow_type == 'support_agent'\n"
        "    assert (result.run_status, result.in_flight) == ('completed', False)\n"
        "    stale = replay_history('histories/support_agent-question.json', workflows=[])\n"
        "    assert stale.status == 'stale'\n"
        "\n"
        "@pytest.mark.replay_history('histories/support_agent-refund-approved.json', workflows=[support_agent])\n"
        "def test_marker(replay_result):\n"
        "    assert replay_result.events == 6\n"
        "\n"
        "@pytest.mark.replay_history('histories/support_agent-refund-approved.json', workflows=[])\n"
        "def test_marker_fails_the_test():\n"
        "    pass\n"
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*test_marker_fails_the_test*", "*support_agent-refund-approved.json*stale*"])


def test_a_lint_setting_mistake_warns_but_a_replay_setting_mistake_stops_the_run(pytester: pytest.Pytester) -> None:
    make_project(pytester, ini=INI + '\n[tool.replaytest]\nselect = ["nonsense"]\n')
    result = pytester.runpytest()
    result.assert_outcomes(passed=4, warnings=1)
    result.stdout.fnmatch_lines(["*ReplayWarning: replay settings read without [[]tool.replaytest[]]*select*"])
    (pytester.path / "pyproject.toml").write_text(INI + '\n[tool.replaytest.replay]\nprompts-running = "maybe"\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*replay.prompts-running: must be one of fail, warn, ignore*"])


def test_prompt_drift_fails_a_parked_history_and_warns_for_completed_ones(pytester: pytest.Pytester) -> None:
    make_project(pytester, agent=AGENT.replace("Decide the next steps for this ticket", "Decide the next steps for this request"))
    result = pytester.runpytest("-rf")
    result.assert_outcomes(passed=3, failed=1, warnings=4)
    result.stdout.fnmatch_lines(
        [
            "*support_agent-refund-waiting.json: support_agent id ticket-refund-waiting: diverged (2 recorded events), "
            "in-flight run (parked)",
            "  prompt-drift at event #1: model 'plan' now uses prompt version * but the history recorded sha256:0db5898c4575 "
            "(prompt planner) (this parked run keeps the result of model 'plan' recorded under sha256:0db5898c4575 and resumes at signal "
            "'approved'; the next prompt it uses is writer sha256:4a9762bd164c, the only one of its prompts no "
            "recorded call used)",
            "replayed 3 histories: 2 passed, 1 diverged, 0 stale",
            "in-flight runs that break: 1 (1 parked)",
            "finished runs that diverge: 0",
            "prompt drift: 2 warning(s)",
        ]
    )


def test_current_code_that_cannot_be_imported_is_one_usage_error(pytester: pytest.Pytester) -> None:
    """Not one failure per history: the run stops before any test with the setting and the reason."""
    make_project(pytester, ini=INI.replace("shop.agent:support_agent", "shop.agent:no_such_agent"))
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.str().count("ERROR: cannot load the current code") == 1, result.stderr.str()
    result.stderr.fnmatch_lines(["*replay_workflows in *pyproject.toml*cannot import 'shop.agent:no_such_agent'*"])
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()
    # A run that collects no history imports nothing and is not stopped by it.
    pytester.runpytest("tests").assert_outcomes(passed=1)


@pytest.mark.slow
def test_current_code_that_cannot_be_imported_is_a_usage_error_under_xdist_too(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    make_project(pytester, ini=INI.replace("shop.agent:support_agent", "shop.agent:no_such_agent"))
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # raised on the controller, before any worker starts
    assert result.stderr.str().count("ERROR: cannot load the current code") == 1
    assert "cannot import 'shop.agent:no_such_agent'" in result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    # Pointed at the unit tests only, the controller imports nothing and the run goes ahead.
    pytester.runpytest_subprocess("-p", "xdist", "-n", "2", "tests").assert_outcomes(passed=1)


def test_an_empty_history_folder_is_a_usage_error_not_no_tests_ran(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    for history in (pytester.path / "histories").glob("*.json"):
        history.unlink()
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: no history to replay: replay_paths in *pyproject.toml names *histories*"])
    shutil.rmtree(pytester.path / "histories")  # a folder that is not there is the same mistake
    assert pytester.runpytest().ret == pytest.ExitCode.USAGE_ERROR


def test_history_items_carry_the_registered_replay_marker(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    assert collected(pytester.runpytest("--collect-only", "-q", "-m", "not replay")) == ["tests/test_unit.py::test_unit"]
    assert collected(pytester.runpytest("--collect-only", "-q", "-m", "replay")) == history_ids()
    # Registered: --strict-markers accepts it, and `pytest --markers` documents it.
    pytester.runpytest("--strict-markers", "-m", "not replay").assert_outcomes(passed=1, deselected=3)
    pytester.runpytest("--markers").stdout.fnmatch_lines(["@pytest.mark.replay: a recorded history replayed*"])


def test_an_invalid_boolean_ini_value_names_the_option(pytester: pytest.Pytester) -> None:
    make_project(pytester, ini=INI + 'replay_strict_args = "maybe"\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: replay_strict_args in *pyproject.toml must be true or false*maybe*"])


def test_the_junit_divergence_property_is_a_sentence_with_a_rootdir_relative_path(pytester: pytest.Pytester) -> None:
    import xml.etree.ElementTree as ElementTree

    make_project(pytester, agent=AGENT.replace('ctx.step("fetch orders"', 'ctx.step("load orders"'))
    (pytester.path / "tests" / "sub").mkdir()
    # Run from a subfolder: the path is still relative to the rootdir, not to where pytest ran.
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(pytester.path / "tests" / "sub")
        pytester.runpytest(str(pytester.path), "--junitxml", str(pytester.path / "report.xml"))
    root = ElementTree.parse(pytester.path / "report.xml").getroot()
    points = [prop.get("value") for prop in root.iter("property") if prop.get("name") == "replaytest-divergence-point"]
    assert len(points) == 3, points
    line = next(number for number, text in enumerate(AGENT.splitlines(), 1) if 'ctx.step("fetch orders"' in text)
    assert f"support_agent: command-mismatch at event #2, shop/agent.py:{line} (in-flight run)" in points
    assert all("{" not in point and str(pytester.path) not in point for point in points)
