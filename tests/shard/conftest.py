"""Fixtures of the sharding tests: the parcel-claims project of ``shard_kit``, recorded once per session
and copied per test (recording twelve runs costs a subprocess)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from shard_kit import write_project  # noqa: E402


@pytest.fixture(scope="session")
def recorded_claims(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("recorded") / "claims-project")


@pytest.fixture
def claims_project(recorded_claims: Path, tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(recorded_claims, project)
    return project
