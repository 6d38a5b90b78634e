"""Fixtures of the deploy-impact end-to-end scenarios: each engine's scenario is recorded once per
session (a real Temporal dev server, a real DBOS app on SQLite, a real LangGraph SqliteSaver) and every
test gets its own copy of the project, git repository included, to change and replay."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TEMPORAL_TESTS = HERE.parent / "temporal"
for folder in (HERE, TEMPORAL_TESTS):  # the kits, and the Temporal suite's dev-server helper
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import impact_dbos_kit  # noqa: E402
import impact_langgraph_kit  # noqa: E402
import impact_stategraph_kit  # noqa: E402
import impact_temporal_kit  # noqa: E402
from impact_kit import ScenarioKit  # noqa: E402
from temporal_devserver import DevServer, running_dev_server  # noqa: E402


@pytest.fixture(scope="session")
def impact_dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev_server(tmp_path_factory.mktemp("impact-temporal-server")) as server:
        yield server


@pytest.fixture(scope="session")
def temporal_recording(impact_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> ScenarioKit:
    return impact_temporal_kit.record(tmp_path_factory.mktemp("impact-temporal") / "disputes", impact_dev_server.address)


@pytest.fixture
def temporal_kit(temporal_recording: ScenarioKit, tmp_path: Path) -> ScenarioKit:
    return temporal_recording.copied_to(tmp_path)


@pytest.fixture(scope="session")
def dbos_recording(tmp_path_factory: pytest.TempPathFactory) -> ScenarioKit:
    return impact_dbos_kit.record(tmp_path_factory.mktemp("impact-dbos") / "dispute-desk")


@pytest.fixture
def dbos_kit(dbos_recording: ScenarioKit, tmp_path: Path) -> ScenarioKit:
    return dbos_recording.copied_to(tmp_path)


@pytest.fixture(scope="session")
def langgraph_recording(tmp_path_factory: pytest.TempPathFactory) -> ScenarioKit:
    return impact_langgraph_kit.record(tmp_path_factory.mktemp("impact-langgraph") / "dispute-graph")


@pytest.fixture
def langgraph_kit(langgraph_recording: ScenarioKit, tmp_path: Path) -> ScenarioKit:
    return langgraph_recording.copied_to(tmp_path)


@pytest.fixture(scope="session")
def stategraph_recording(tmp_path_factory: pytest.TempPathFactory) -> ScenarioKit:
    return impact_stategraph_kit.record(tmp_path_factory.mktemp("impact-stategraph") / "refund-desk")


@pytest.fixture
def stategraph_kit(stategraph_recording: ScenarioKit, tmp_path: Path) -> ScenarioKit:
    return stategraph_recording.copied_to(tmp_path)
