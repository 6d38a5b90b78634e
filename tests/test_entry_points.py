"""The entry-point reader against importlib.metadata: the same entry points, in the same order, on the
real environment and on crafted ones (duplicates, name normalisation, comments, zip and egg entries)."""

from __future__ import annotations

import sys
import zipfile
from importlib.metadata import entry_points as metadata_entry_points
from pathlib import Path

import pytest

from replaytest import entry_points as reader


def _pairs_from_metadata(group: str) -> list[tuple[str, str]]:
    return [(entry.name, entry.value) for entry in metadata_entry_points(group=group)]


def _pairs_from_reader(group: str) -> list[tuple[str, str]]:
    return [(entry.name, entry.value) for entry in reader.entry_points(group)]


def _distribution(folder: Path, directory_name: str, text: str) -> None:
    info = folder / directory_name
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {directory_name.split('-')[0]}\n")
    (info / "entry_points.txt").write_text(text)


def test_every_group_of_this_environment_matches_importlib_metadata() -> None:
    scanned = reader._read_folders()
    assert scanned is not None, "this environment is plain folders: the fast reader must apply"
    groups = {entry.group for entry in scanned}
    assert "console_scripts" in groups  # replaytest's own script, so the scan saw this install
    for group in sorted(groups):
        assert _pairs_from_reader(group) == _pairs_from_metadata(group), group


def test_crafted_folders_first_distribution_of_a_name_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _distribution(first, "acme_plugins-1.0.dist-info",
                  "# a comment\n[replaytest.plugins]\n  alpha =  acme.alpha:PLUGIN \n\n[other]\nx = y:z\n")
    # The same distribution under another spelling, later on the path: importlib.metadata skips it.
    _distribution(second, "Acme.Plugins-2.0.dist-info", "[replaytest.plugins]\nshadowed = acme.old:PLUGIN\n")
    _distribution(second, "beta-0.1.egg-info", "[replaytest.plugins]\nbeta = beta.plugin:PLUGIN [extra]\n")
    _distribution(second, "gamma-3.dist-info", "[console_scripts]\ngamma = gamma:main\n")
    (second / "plain_module.py").write_text("")
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "missing"), str(second), *sys.path])
    assert _pairs_from_reader("replaytest.plugins")[:2] == [("alpha", "acme.alpha:PLUGIN"),
                                                             ("beta", "beta.plugin:PLUGIN [extra]")]
    for group in ("replaytest.plugins", "other", "console_scripts"):
        assert _pairs_from_reader(group) == _pairs_from_metadata(group), group


def test_a_zip_on_the_path_is_read_through_importlib_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\n")
        bundle.writestr("zipped-1.0.dist-info/entry_points.txt", "[replaytest.plugins]\nzipped = zipped:PLUGIN\n")
    monkeypatch.setattr(sys, "path", [str(archive), *sys.path])
    assert reader._read_folders() is None
    assert ("zipped", "zipped:PLUGIN") in _pairs_from_reader("replaytest.plugins")
    assert _pairs_from_reader("replaytest.plugins") == _pairs_from_metadata("replaytest.plugins")


def test_an_extra_metadata_finder_defers_to_importlib_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    class Finder:
        @staticmethod
        def find_spec(*_: object) -> None:
            return None

        @staticmethod
        def find_distributions(*_: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert reader._read_folders() is None


def test_load_follows_dotted_attributes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ep_target_module.py").write_text("class Holder:\n    value = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert reader.EntryPoint("x", "ep_target_module:Holder.value", "g").load() == 42
    assert reader.EntryPoint("x", "ep_target_module", "g").load().__name__ == "ep_target_module"
    with pytest.raises(ValueError, match="not 'module:attribute'"):
        reader.EntryPoint("x", "not a value!", "g").load()
