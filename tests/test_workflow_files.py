"""``gate.workflow_files``: the code under test's source files, which replay coverage and patch retirement
read — the module of each workflow object, and the modules a DBOS replay configuration names."""

from __future__ import annotations

import sys
from pathlib import Path

from replaytest.gate import workflow_files
from replaytest.plugins.dbos.replayer import DBOSReplayConfig
from replaytest.replay.adapter import WorkflowSet


def test_a_dbos_replay_configuration_contributes_the_modules_it_names(tmp_path: Path, monkeypatch) -> None:
    package = tmp_path / "desk"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "flows.py").write_text("def refund_flow():\n    return 1\n")
    (package / "replay.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    import desk.flows  # noqa: F401  (imported as replay would)

    try:
        config = DBOSReplayConfig(modules=("desk.flows", "desk.not_imported"))
        assert workflow_files(WorkflowSet(objects=[config])) == [(package / "flows.py").resolve()]
    finally:
        for name in ("desk", "desk.flows"):
            sys.modules.pop(name, None)


def test_a_workflow_function_contributes_its_own_module() -> None:
    assert workflow_files(WorkflowSet(objects=[test_a_workflow_function_contributes_its_own_module])) == [
        Path(__file__).resolve()
    ]
