"""The pytest plugin's double run: the ``double_run`` fixture (inputs from any of the test's fixtures) and the
``@pytest.mark.double_run`` marker (input from the ``double_run_input`` fixture, parametrized or not), on
journal workflows: a planted hazard lint cannot see fails, a deterministic control passes, and misuse is a
clear usage error."""

import pytest

FLOWS = '''
from replaytest.journal import workflow

CHECKS = ["audit", "billing", "credit", "delivery", "email", "fraud", "geo", "history"]


def call_service(*args):  # a step body; never runs under the double run
    raise AssertionError("a step body ran")


@workflow(name="control")
def control(ctx, order):
    tier = ctx.step("lookup", call_service, order["id"])
    for name in sorted(CHECKS):
        ctx.step(name, call_service, order["id"], tier["level"])
    return tier


@workflow(name="by_string_hash")
def by_string_hash(ctx, order):
    for name in sorted(CHECKS, key=hash):  # hash(str) differs under another PYTHONHASHSEED
        ctx.step(name, call_service, order["id"])
    return "ok"
'''

CONFTEST = '''
import pytest


@pytest.fixture(params=[{"id": "order-1"}, {"id": "order-2"}], ids=["one", "two"])
def double_run_input(request):
    return request.param


@pytest.fixture
def big_order():
    return {"id": "order-big", "lines": 40}
'''

STUBS = '{"lookup": {"level": "gold"}}'


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONHASHSEED", "1")  # the second process's (2) orders the planted hazard otherwise
    pytester.makepyfile(flows=FLOWS, conftest=CONFTEST)
    return pytester


def test_fixture_runs_a_case_from_the_tests_own_fixture(project):
    project.makepyfile(test_flows=f'''
from flows import by_string_hash, control


def test_control(double_run, big_order):
    result = double_run("control", big_order, steps={STUBS}, workflows=[control])
    assert result.status == "passed", result
    assert result.events == 9


def test_hazard(double_run, big_order):
    result = double_run("by_string_hash", big_order, workflows=[by_string_hash])
    assert result.status == "diverged"
    assert result.divergence.kind == "command-mismatch"
    assert "a second process" in result.divergence.message
    assert result.divergence.source.path.endswith("flows.py")
''')
    result = project.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_marker_takes_the_input_fixture_and_fails_the_test_when_runs_part(project):
    project.makepyfile(test_marked=f'''
import pytest

from flows import by_string_hash, control


@pytest.mark.double_run("control", steps={STUBS}, workflows=[control])
def test_control_is_deterministic(double_run_input):
    assert double_run_input["id"].startswith("order-")


@pytest.mark.double_run("by_string_hash", workflows=[by_string_hash])
def test_hazard_is_found(double_run_input):
    pass


@pytest.mark.double_run("control", input={{"id": "given"}}, steps={STUBS}, workflows=[control])
def test_input_given_on_the_marker():
    pass
''')
    result = project.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-rf")
    # Both parametrized inputs of the control pass; the hazard fails for each; input= needs no fixture.
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines([
        "FAILED test_marked.py::test_hazard_is_found[[]one[]]*",
        "FAILED test_marked.py::test_hazard_is_found[[]two[]]*",
    ])
    result.stdout.fnmatch_lines(["*by_string_hash*diverged*", "*a second process*"])


def test_marker_without_an_input_is_a_usage_error(pytester, monkeypatch):
    pytester.makepyfile(flows=FLOWS)
    pytester.makepyfile(test_no_input='''
import pytest

from flows import control


@pytest.mark.double_run("control", workflows=[control])
def test_control():
    pass
''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*takes its input from the 'double_run_input' fixture*request it*"])
    assert result.ret != 0


def test_a_workflow_the_second_process_cannot_import_is_refused(project):
    project.makepyfile(test_local='''
from replaytest.journal import workflow


def test_local(double_run):
    @workflow(name="local")
    def local(ctx, order):
        return order

    try:
        double_run("local", {"id": 1}, workflows=[local])
    except TypeError as error:
        assert "defined at a module's top level" in str(error)
    else:
        raise AssertionError("a local workflow was accepted")
''')
    result = project.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
