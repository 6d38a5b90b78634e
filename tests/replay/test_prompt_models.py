"""A prompt's version covers its model and the parameters that change the model's output: a switch of
model or temperature is prompt drift, reported as such ("model gpt-4o-mini → gpt-4.1"), on the real
journal runtime; a prompt declaring neither keeps the version it always had, so older histories compare
as before."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from replaykit import record, replay

from replaytest.history import load_history
from replaytest.journal import workflow
from replaytest.prompts import Prompt, describe_version_change, prompt_manifest, short_version, split_version

TEMPLATE = "Answer the customer's question politely:\n{question}"


def test_a_prompt_without_a_model_keeps_its_text_version() -> None:
    prompt = Prompt("reply", TEMPLATE)
    expected = "sha256:" + hashlib.sha256(TEMPLATE.encode()).hexdigest()
    assert prompt.version == prompt.full_version == prompt.ref.version == expected
    assert Prompt("reply", TEMPLATE, version="v3").full_version == "v3"


def test_model_and_parameters_are_part_of_the_full_version() -> None:
    base = Prompt("reply", TEMPLATE, version="v1", model="gpt-4o-mini", params={"temperature": 0.2, "max_tokens": 400})
    text, model, digest = split_version(base.full_version)
    assert (text, model) == ("v1", "gpt-4o-mini") and digest is not None and len(digest) == 16
    # Key order does not matter; every value does.
    same = Prompt("reply", TEMPLATE, version="v1", model="gpt-4o-mini", params={"max_tokens": 400, "temperature": 0.2})
    assert same.full_version == base.full_version and same == base
    assert base.with_model("gpt-4.1", temperature=0.2, max_tokens=400).full_version != base.full_version
    assert base.with_model("gpt-4o-mini", temperature=0.9, max_tokens=400).full_version != base.full_version
    assert short_version(base.full_version) == f"v1 (gpt-4o-mini, params {digest[:8]})"


def test_parameters_are_copied_when_the_prompt_is_made() -> None:
    params: dict[str, Any] = {"temperature": 0.2}
    prompt = Prompt("reply", TEMPLATE, model="gpt-4o-mini", params=params)
    before = prompt.full_version
    params["temperature"] = 1.0
    assert prompt.full_version == before and prompt.params == {"temperature": 0.2}


@pytest.mark.parametrize(
    ("model", "params", "problem"),
    [("gpt 4o", None, "model must be a model name"), ("", None, "model must be"), (None, {"t": object()}, "JSON values")],
)
def test_a_model_or_parameters_that_cannot_be_recorded_are_refused(model, params, problem) -> None:
    with pytest.raises((ValueError, TypeError), match=problem):
        Prompt("reply", TEMPLATE, model=model, params=params)


def test_what_changed_is_said_in_words() -> None:
    old = Prompt("reply", TEMPLATE, version="v1", model="gpt-4o-mini", params={"temperature": 0.2})
    assert describe_version_change(old.full_version, old.with_model("gpt-4.1", temperature=0.2).full_version) == (
        "model gpt-4o-mini → gpt-4.1"
    )
    warmer = old.with_model("gpt-4o-mini", temperature=0.9)
    assert describe_version_change(old.full_version, warmer.full_version, old.params, warmer.params) == (
        "temperature 0.2 → 0.9"
    )
    # Without the recorded parameters only their digests are known; with the current ones, they are named.
    old_digest, new_digest = split_version(old.full_version)[2], split_version(warmer.full_version)[2]
    assert old_digest is not None and new_digest is not None
    assert describe_version_change(old.full_version, warmer.full_version) == (
        f"parameters digest {old_digest[:8]} → {new_digest[:8]} (their values were not recorded)"
    )
    assert describe_version_change(old.full_version, warmer.full_version, None, warmer.params) == (
        f"parameters now temperature 0.9; the run recorded only their digest {old_digest[:8]}"
    )
    assert describe_version_change("v1", old.full_version) == "model not declared → gpt-4o-mini; parameters declared"


def test_fetched_prompts_version_their_text_and_name_their_source() -> None:
    fetched = Prompt.fetched("reply", TEMPLATE, model="gpt-4o-mini", source="hub:acme/reply:3f2a")
    assert fetched.version == Prompt("reply", TEMPLATE).version
    assert fetched.record() == {
        "name": "reply", "version": fetched.full_version, "model": "gpt-4o-mini", "source": "hub:acme/reply:3f2a",
    }


def answer(text: str) -> str:
    return "Your parcel ships on Monday."


def support_agent(model: str, **params: Any) -> Any:
    prompt = Prompt("reply", TEMPLATE, version="v1", model=model, params=params or None)

    @workflow(name="support_agent")
    def run(ctx: Any, question: str) -> str:
        reply = ctx.model("draft reply", answer, prompt.render(question=question), prompt=prompt)
        ctx.wait_signal("agent review", timeout=7 * 86400)
        return str(reply)

    return run


def test_a_model_switch_at_a_recorded_call_is_prompt_drift_naming_both_models(tmp_path: Path) -> None:
    path = record(tmp_path, support_agent("gpt-4o-mini", temperature=0.2), "Where is my parcel?", name="parked")
    recorded = load_history(path)
    assert recorded.status == "parked"
    assert recorded.events[0].prompt is not None and recorded.events[0].prompt.params == {"temperature": 0.2}
    assert recorded.prompt_manifest == {"reply": recorded.events[0].prompt.version}

    same = replay(path, support_agent("gpt-4o-mini", temperature=0.2))
    assert same.status == "passed" and not same.warnings

    switched = replay(path, support_agent("gpt-4.1", temperature=0.2))
    assert switched.status == "diverged" and switched.divergence is not None
    assert switched.divergence.kind == "prompt-drift"
    assert "(prompt reply: model gpt-4o-mini → gpt-4.1)" in switched.divergence.message

    warmer = replay(path, support_agent("gpt-4o-mini", temperature=0.9))
    assert warmer.divergence is not None and warmer.divergence.kind == "prompt-drift"
    assert "(prompt reply: temperature 0.2 → 0.9)" in warmer.divergence.message


def test_a_model_switch_a_parked_run_has_not_reached_is_named_in_the_pending_check(tmp_path: Path) -> None:
    first = Prompt("classify", "Classify: {question}", version="v1")
    later = Prompt("reply", TEMPLATE, version="v1", model="gpt-4o-mini")

    def agent(reply: Prompt) -> Any:
        @workflow(name="support_agent")
        def run(ctx: Any, question: str) -> str:
            ctx.model("classify", answer, first.render(question=question), prompt=first)
            ctx.wait_signal("agent review", timeout=7 * 86400)
            return str(ctx.model("draft reply", answer, reply.render(question=question), prompt=reply))

        return run

    assert "reply" in prompt_manifest(agent(later))
    path = record(tmp_path, agent(later), "Where is my parcel?", name="parked")
    result = replay(path, agent(later.with_model("gpt-4.1")))
    messages = [w.message for w in result.warnings] + ([result.divergence.message] if result.divergence else [])
    assert any("model gpt-4o-mini → gpt-4.1" in message for message in messages), messages


def test_a_renamed_prompt_a_parked_run_has_not_reached_is_a_rename_not_a_change(tmp_path: Path) -> None:
    classify = Prompt("classify", "Classify: {question}", version="v1")

    def agent(reply: Prompt) -> Any:
        @workflow(name="support_agent")
        def run(ctx: Any, question: str) -> str:
            ctx.model("classify", answer, classify.render(question=question), prompt=classify)
            ctx.wait_signal("agent review", timeout=7 * 86400)
            return str(ctx.model("draft reply", answer, reply.render(question=question), prompt=reply))

        return run

    path = record(tmp_path, agent(Prompt("reply", TEMPLATE, version="v1")), "Where is my parcel?", name="parked")
    renamed = replay(path, agent(Prompt("customer-reply", TEMPLATE, version="v1")), prompts_pending="fail")
    assert renamed.status == "passed" and renamed.warnings == [] and renamed.prompt_changes == []
    assert "prompt reply is now named customer-reply at the same version v1: a rename, not a change" in renamed.notes
    # The same new name at another version is a new prompt, reported as one.
    reworded = replay(path, agent(Prompt("customer-reply", TEMPLATE + "!", version="v2")), prompts_pending="fail")
    assert reworded.divergence is not None and "did not exist when it started" in reworded.divergence.message


def test_the_readme_model_aware_example_runs() -> None:
    """README's "Prompt versions" block for models and fetched prompts runs as written (with a stand-in
    registry client and model call), and what it says it records is what it records."""
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S) if "Prompt.fetched(" in b]
    rendered: list[str] = []

    class Hub:
        def pull(self, name: str) -> str:
            return "Answer politely and briefly: {ticket}"

    namespace: dict[str, Any] = {"hub": Hub(), "call_model": lambda text: rendered.append(text) or "ok"}
    exec(compile(block, "README.md", "exec"), namespace)
    reply = namespace["REPLY"]
    assert split_version(reply.full_version)[1] == "gpt-4o-mini"
    assert namespace["reply_step"]("where is my parcel?") == "ok"
    assert rendered == ["Answer politely and briefly: where is my parcel?"]


def test_a_prompt_a_parked_run_has_not_reached_is_reported_at_the_line_using_it(tmp_path: Path) -> None:
    import inspect

    classify = Prompt("classify", "Classify: {question}", version="v1")

    def agent(reply: Prompt) -> Any:
        @workflow(name="support_agent")
        def run(ctx: Any, question: str) -> str:
            ctx.model("classify", answer, classify.render(question=question), prompt=classify)
            ctx.wait_signal("agent review", timeout=7 * 86400)
            text = reply.render(question=question)  # [renders reply]
            return str(ctx.model("draft reply", answer, text, prompt=reply))

        return run

    path = record(tmp_path, agent(Prompt("reply", TEMPLATE, version="v1")), "Where is my parcel?", name="parked")
    result = replay(path, agent(Prompt("reply", TEMPLATE, version="v2")), prompts_pending="fail")
    assert result.divergence is not None and result.divergence.kind == "prompt-drift"
    source = result.divergence.source
    lines, first = inspect.getsourcelines(agent)
    tagged = first + next(i for i, line in enumerate(lines) if line.rstrip().endswith("# [renders reply]"))
    assert source is not None and (Path(source.path).name, source.line) == ("test_prompt_models.py", tagged)


def test_report_rows_show_the_whole_version(tmp_path: Path) -> None:
    """A model switch keeps the text version: the rows of the report must show the models, or both sides
    read the same."""
    path = record(tmp_path, support_agent("gpt-4o-mini", temperature=0.2), "Where is my parcel?", name="parked")
    switched = replay(path, support_agent("gpt-4.1", temperature=0.2))
    assert switched.divergence is not None and switched.divergence.recorded is not None
    assert switched.divergence.issued is not None
    recorded, issued = switched.divergence.recorded.describe(), switched.divergence.issued.describe()
    assert "(gpt-4o-mini, params " in recorded and "(gpt-4.1, params " in issued and recorded != issued


def test_a_parameter_change_a_parked_run_has_not_reached_names_the_current_parameters(tmp_path: Path) -> None:
    """The start manifest keeps the parameters' digest only: the pending check says what they are now."""
    first = Prompt("classify", "Classify: {question}", version="v1")

    def agent(reply: Prompt) -> Any:
        @workflow(name="support_agent")
        def run(ctx: Any, question: str) -> str:
            ctx.model("classify", answer, first.render(question=question), prompt=first)
            ctx.wait_signal("agent review", timeout=7 * 86400)
            return str(ctx.model("draft reply", answer, reply.render(question=question), prompt=reply))

        return run

    cool = Prompt("reply", TEMPLATE, version="v1", model="gpt-4o-mini", params={"temperature": 0.2})
    path = record(tmp_path, agent(cool), "Where is my parcel?", name="parked")
    result = replay(path, agent(cool.with_model("gpt-4o-mini", temperature=0.9)))
    assert result.divergence is not None and result.divergence.kind == "prompt-drift"
    digest = split_version(cool.full_version)[2]
    assert digest is not None
    assert f"(parameters now temperature 0.9; the run recorded only their digest {digest[:8]})" in result.divergence.message


def test_a_renamed_prompt_a_recorded_call_used_is_not_listed_as_a_change() -> None:
    """A run whose versions come from its start manifest (or whose engine reports a call's prompts by their
    current names, with no version) called ``triage``, now named ``sorter`` at the same version: the change
    list the impact report groups must not call it a prompt added since that the run already called."""
    from replaytest.replay.engine import prompt_changes

    version = Prompt("triage", TEMPLATE, model="gpt-4o-mini").full_version
    assert prompt_changes({"triage": version}, {"sorter": version}, {"sorter": None}, "manifest") == []
    # A recorded call of the new name at another version is still a change.
    [change] = prompt_changes({"triage": version}, {"sorter": version}, {"sorter": "v0"}, "call")
    assert (change.name, change.started, change.called) == ("sorter", "v0", True)
