"""Double-run cases from Temporal's own history JSON (a dev server's recording, edited where a test needs
another shape): the input and each activity's result in ``json/plain``; a history started with several
arguments, or whose input another converter encoded, is no case (the error names the place), and a
result in another encoding is left to the stubs of the inputs file."""

import base64
import copy
import json
from pathlib import Path

import pytest

from replaytest.plugins.temporal.double_run_cases import case_from_temporal_history
from replaytest.replay.double_run import DoubleRunInputError
from replaytest.replay.runner import read_head

HISTORY = Path(__file__).resolve().parents[1] / "temporal" / "histories" / "hello_timer_history.json"


def case_of(tmp_path, edit=None):
    document = json.loads(HISTORY.read_text())
    if edit is not None:
        document = copy.deepcopy(document)
        edit(document)
    path = tmp_path / "history.json"
    path.write_text(json.dumps(document))
    return case_from_temporal_history(path, read_head(path))


def started_input(document):
    return document["events"][0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"]


def test_recorded_input_and_activity_results(tmp_path):
    case = case_of(tmp_path)
    assert (case.engine, case.workflow, case.workflow_id, case.input) == ("temporal", "Hello", "hello-1", "bob")
    assert case.recorded == {1: ("activity", "say", "hi bob"), 3: ("activity", "say", "hi hi bob")}


def test_not_a_temporal_history_is_left_to_other_readers(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"format": "replaytest-history"}')
    assert case_from_temporal_history(path, read_head(path)) is None


def test_several_arguments_are_no_case(tmp_path):
    with pytest.raises(DoubleRunInputError, match=r"\$\.events\[0\]: the workflow was started with 2 arguments"):
        case_of(tmp_path, lambda d: started_input(d).append(started_input(d)[0]))


def test_input_of_another_encoding_is_no_case(tmp_path):
    def binary(document):
        started_input(document)[0]["metadata"]["encoding"] = base64.b64encode(b"binary/encrypted").decode()

    with pytest.raises(DoubleRunInputError, match="not json/plain"):
        case_of(tmp_path, binary)


def test_result_of_another_encoding_is_left_to_the_stubs(tmp_path):
    def binary_results(document):
        for event in document["events"]:
            attributes = event.get("activityTaskCompletedEventAttributes")
            if attributes:
                attributes["result"]["payloads"][0]["metadata"]["encoding"] = base64.b64encode(b"binary/plain").decode()

    assert case_of(tmp_path, binary_results).recorded == {}
