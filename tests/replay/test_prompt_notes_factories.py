"""On the real journal runtime, the "calls a model but recorded no prompt version" note follows a model a
project factory returns (a local ``llm = get_model()``, ``get_model().invoke``, a module-level ``MODEL =
make_llm()`` holding a runnable wrapper), and honours the model calls a project adds in RT201's ``calls``
option (read by ``replaytest replay`` from the configuration lint reads, or passed as replay options)."""

from __future__ import annotations

import json
from pathlib import Path

import model_factory_app as app
import pytest
from click.testing import CliRunner
from replaykit import record, replay, tagged_line

from replaytest.cli import cli
from replaytest.config import ConfigError, config_from_table
from replaytest.replay.engine import UNRECORDED_MODEL_CALL_NOTE
from replaytest.replay.settings import declared_model_calls

HERE = Path(__file__).resolve().parent
IN_HOUSE = "model_factory_app.InHouseClient.complete"


def _notes(result) -> list[str]:
    return [note for note in result.notes if "recorded no prompt version:" in note]


def _note(step: str, position: int, call: str, tag: str) -> str:
    site = f"{call} at model_factory_app.py:{tagged_line(app.factory_agent, tag)}"
    return UNRECORDED_MODEL_CALL_NOTE.format(what=f"step {step!r} (event #{position})", site=site)


def test_a_model_made_by_a_project_factory_is_followed(tmp_path: Path) -> None:
    path = record(tmp_path, app.factory_agent, "my invoice was charged twice")
    result = replay(path, app.factory_agent)
    assert result.status == "passed", result
    # Not the step that calls no model.
    assert _notes(result) == [
        _note("local", 2, "llm.invoke", "local factory"),
        _note("called", 3, "get_model().invoke", "called factory"),
        _note("module", 4, "MODEL.invoke", "module factory"),
    ]


def test_a_client_named_in_the_options_counts_as_a_model_call(tmp_path: Path) -> None:
    path = record(tmp_path, app.in_house_agent, "my invoice was charged twice")
    assert _notes(replay(path, app.in_house_agent)) == []  # unknown to the catalogue: no note
    noted = replay(path, app.in_house_agent, model_calls=(IN_HOUSE,))
    site = f"IN_HOUSE.complete at model_factory_app.py:{tagged_line(app.ask_in_house, 'in-house client')}"
    assert _notes(noted) == [UNRECORDED_MODEL_CALL_NOTE.format(what="step 'reply' (event #2)", site=site)]


@pytest.mark.parametrize("table", [
    {"rules": {"RT201": {"calls": [IN_HOUSE]}}},
    {"model-calls": [IN_HOUSE]},  # the older top-level key of the same option
])
def test_replay_reads_rt201_calls_from_the_configuration(tmp_path: Path, table: dict, monkeypatch) -> None:
    assert declared_model_calls(config_from_table(table)) == (IN_HOUSE,)
    path = record(tmp_path, app.in_house_agent, "my invoice was charged twice")
    project = tmp_path / "project"
    project.mkdir()
    lines = ["[tool.replaytest.rules.RT201]", f'calls = ["{IN_HOUSE}"]'] if "rules" in table else \
        ["[tool.replaytest]", f'model-calls = ["{IN_HOUSE}"]']
    (project / "pyproject.toml").write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.chdir(project)
    ran = CliRunner().invoke(cli, ["replay", str(path), "--workflows", "model_factory_app:in_house_agent",
                                   "--format", "json"])
    assert ran.exit_code == 0, ran.output
    [data] = json.loads(ran.output)["results"]
    assert [note for note in data["notes"] if "IN_HOUSE.complete at model_factory_app.py" in note], data["notes"]


@pytest.mark.parametrize("value, problem", [
    ("acme.llm.complete", "must be a list of dotted qualified names"),
    (["acme llm"], "is not a dotted qualified name"),
])
def test_a_wrong_calls_value_is_a_configuration_error_for_replay(tmp_path: Path, value, problem, monkeypatch) -> None:
    with pytest.raises(ConfigError, match=problem):
        declared_model_calls(config_from_table({"rules": {"RT201": {"calls": value}}}))
    path = record(tmp_path, app.in_house_agent, "my invoice was charged twice")
    (tmp_path / "pyproject.toml").write_text(f"[tool.replaytest.rules.RT201]\ncalls = {json.dumps(value)}\n")
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.chdir(tmp_path)
    ran = CliRunner().invoke(cli, ["replay", str(path), "--workflows", "model_factory_app:in_house_agent"])
    assert ran.exit_code == 2 and problem in ran.output, ran.output
