"""What Temporal's Replayer does not check, checked by replaytest: activity inputs, the lines and digests
in the report, duplicate workflow type names, and the data-converter hint."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import temporal_wf_hello as hello
from hypothesis import given, settings
from hypothesis import strategies as st

from replaytest.plugins.temporal.replayer import TemporalReplayer
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.report import render_text

# Not imported from conftest: run together with tests/impact_e2e, the module named conftest may be that one.
HERE = Path(__file__).resolve().parent
HISTORIES = HERE / "histories"


def _line(tag: str) -> int:
    lines = Path(hello.__file__).read_text(encoding="utf-8").splitlines()
    return next(number for number, text in enumerate(lines, 1) if text.rstrip().endswith(f"# [{tag}]"))


def test_changed_activity_argument_warns_and_fails_with_strict_args(temporal_replayer: TemporalReplayer) -> None:
    path = HISTORIES / "hello_timer_history.json"
    workflows = WorkflowSet((hello.HelloOtherArgument,))
    warned = temporal_replayer.replay(path, workflows, ReplayOptions())
    assert warned.status == "passed", render_text(warned)
    assert [(w.kind, w.position) for w in warned.warnings] == [("args-mismatch", 16)]
    assert warned.warnings[0].source is not None and warned.warnings[0].source.line == _line("upper")
    assert "activity 'say' was called with other arguments than recorded" in warned.warnings[0].message

    strict = temporal_replayer.replay(path, workflows, ReplayOptions(strict_args=True))
    assert strict.status == "diverged"
    assert strict.divergence is not None and strict.divergence.kind == "args-mismatch"
    text = render_text(strict)
    recorded, issued = strict.divergence.recorded, strict.divergence.issued
    assert recorded is not None and issued is not None
    assert recorded.args_digest and issued.args_digest and recorded.args_digest != issued.args_digest
    assert f"temporal_wf_hello.py:{_line('upper')}" in text


def test_unchanged_code_compares_inputs_and_passes_without_warnings(temporal_replayer: TemporalReplayer) -> None:
    result = temporal_replayer.replay(HISTORIES / "hello_timer_history.json", WorkflowSet((hello.Hello,)), ReplayOptions(strict_args=True))
    assert (result.status, result.warnings, result.notes) == ("passed", [], [])


def test_inserted_call_of_the_same_type_is_never_shown_as_same(temporal_replayer: TemporalReplayer) -> None:
    result = temporal_replayer.replay(HISTORIES / "hello_timer_history.json", WorkflowSet((hello.HelloInsertedCall,)), ReplayOptions())
    assert result.status == "diverged", render_text(result)
    divergence = result.divergence
    assert divergence is not None
    # The inserted say("intro") took the place of the recorded say(name) at event 5.
    row = next(line for line in render_text(result).splitlines() if line.strip().startswith("#5 "))
    assert "same" not in row.split("|")[1]
    assert f"@ temporal_wf_hello.py:{_line('inserted')}" in row
    first = next(view for view in divergence.issued_context if view.position == 5)
    recorded_first = next(view for view in divergence.recorded_context if view.position == 5)
    assert first.args_digest != recorded_first.args_digest


def test_duplicate_workflow_type_names_are_a_configuration_error_naming_both(tmp_path: Path) -> None:
    outcome = subprocess.run(
        [sys.executable, "-m", "replaytest", "replay", str(HISTORIES / "hello_timer_history.json"),
         "-w", "temporal_wf_hello:Hello", "-w", "temporal_wf_hello:HelloRenamedSecond"],
        cwd=HERE, capture_output=True, text=True, timeout=120,
    )
    assert outcome.returncode == 2, outcome.stdout + outcome.stderr
    assert "workflow type 'Hello' is defined by temporal_wf_hello.Hello and temporal_wf_hello.HelloRenamedSecond" in outcome.stdout


def test_payload_the_default_converter_cannot_decode_names_the_setting(temporal_replayer: TemporalReplayer, tmp_path: Path) -> None:
    data = json.loads((HISTORIES / "hello_timer_history.json").read_text())
    started = data["events"][0]["workflowExecutionStartedEventAttributes"]
    payload = started["input"]["payloads"][0]
    payload["metadata"]["encoding"] = base64.b64encode(b"binary/encrypted").decode()
    path = tmp_path / "encrypted.json"
    path.write_text(json.dumps(data))
    result = temporal_replayer.replay(path, WorkflowSet((hello.Hello,)), ReplayOptions())
    assert result.status in ("error", "diverged")
    text = render_text(result)
    assert "set data_converter in a TemporalReplayConfig" in text, text


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.tuples(children, children)
    | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_JSON, max_size=4))
def test_plain_json_arguments_digest_as_their_payload_round_trip(args: list) -> None:
    """The recorder's fast path for plain JSON arguments gives the digest of the decoded payloads,
    which is what the recorded side is digested from."""
    from temporalio.converter import DataConverter

    from replaytest.plugins.temporal.inputs import values_digest
    from replaytest.plugins.temporal.trace import _json_native

    converter = DataConverter.default.payload_converter
    assert all(_json_native(arg) for arg in args)
    payloads = converter.to_payloads(args)
    assert values_digest(args, ()) == values_digest(converter.from_payloads(payloads, None), payloads)


def test_use_prompt_outside_workflow_code_changes_nothing() -> None:
    from replaytest.plugins.temporal.prompts import current_prompt, use_prompt
    from replaytest.prompts import Prompt

    prompt = Prompt("writer", "Write", version="v1")
    with use_prompt(prompt) as used:
        assert used is prompt
        assert current_prompt() is None  # no workflow: nothing to record, and no error
