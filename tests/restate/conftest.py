"""Records the order desk on a real Restate server once per session (``restate_kit.record``) and gives the
tests its histories, and the current code of the order desk (or a changed copy of it) to replay them with."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from types import ModuleType

import pytest
from restate_kit import ORDERS_SOURCE, Recording, record

_counter = itertools.count()


@pytest.fixture(scope="session")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    return record(tmp_path_factory.mktemp("restate"))


def load_variant(folder: Path, old: str, new: str) -> tuple[ModuleType, Path]:
    """A copy of the order desk with ``old`` replaced by ``new`` (which must occur), imported as a module."""
    source = ORDERS_SOURCE.read_text()
    assert old in source, f"{old!r} is not in the order desk"
    path = folder / f"orders_variant_{next(_counter)}.py"
    path.write_text(source.replace(old, new, 1))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


@pytest.fixture
def variant(tmp_path: Path):  # type: ignore[no-untyped-def]
    return lambda old, new: load_variant(tmp_path, old, new)
