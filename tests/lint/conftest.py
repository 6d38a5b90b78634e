"""Fixtures for the lint tests; the helpers themselves live in ``lintkit`` so test modules can import them."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Callable, Mapping

import pytest
from lintkit import CliRun, run_replaytest, write_files


@pytest.fixture()
def cli() -> Callable[..., CliRun]:
    """``cli("lint", "--format", "json", ".", cwd=project)`` runs the real command line."""
    return run_replaytest


@pytest.fixture()
def make_project(tmp_path: Path) -> Callable[..., Path]:
    """``make_project({"app/wf.py": "..."}, pyproject="...")`` builds a project under tmp_path.

    Every project gets its own pyproject.toml with a ``[tool.replaytest]`` table so no configuration
    from an enclosing directory applies."""

    def build(files: Mapping[str, str | bytes], pyproject: str = "[tool.replaytest]\n", name: str = "proj") -> Path:
        root = tmp_path / name
        root.mkdir(parents=True, exist_ok=True)
        (root / "pyproject.toml").write_text(textwrap.dedent(pyproject), encoding="utf-8")
        return write_files(root, files)

    return build