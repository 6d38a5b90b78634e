"""The files side of ``replaytest corpus``: where each kept history goes in the output folder, copying it
there with the blobs it names, and deleting dropped histories (``--prune``).

Nothing here deletes or overwrites anything unless asked: ``plan_copies`` refuses an output folder that
already holds histories and two kept histories that would land on one name, before a file is written.
``delete_dropped`` goes on past a history it cannot delete (a read-only folder, say) and reports each
one with the reason (``PruneReport``), so a prune stopped halfway is never taken for a finished one.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from replaytest.history.blobs import BlobStore
from replaytest.replay.cache import blob_files
from replaytest.replay.report import display_path
from replaytest.replay.runner import iter_history_files


class CorpusOutputError(Exception):
    """The kept set cannot be written as asked; the message names the folder or files and the fix."""


@dataclass
class CopyReport:
    histories: list[Path] = field(default_factory=list)  # the copies, in the output folder
    blobs: int = 0
    missing_blobs: list[str] = field(default_factory=list)  # named by a kept history, absent beside it


def relative_place(path: Path, roots: Sequence[Path]) -> Path:
    """Where ``path`` goes under the output folder: its place below the first root folder holding it, or
    its name (a history named on the command line, or outside every root)."""
    resolved = path.resolve()
    for root in roots:
        if root.is_dir():
            try:
                return resolved.relative_to(root.resolve())
            except ValueError:
                continue
    return Path(path.name)


def refuse_out_dir(out_dir: Path, roots: Sequence[Path]) -> None:
    """``CorpusOutputError`` when ``out_dir`` cannot take the kept set: a file, a folder inside one of
    ``roots`` (the copies would be selected from next time), or a folder holding history files already
    (an older selection would mix with this one). Checked before anything is replayed."""
    if out_dir.exists() and not out_dir.is_dir():
        raise CorpusOutputError(f"--out {out_dir}: not a folder")
    for root in roots:
        if root.is_dir() and out_dir.resolve().is_relative_to(root.resolve()):
            raise CorpusOutputError(
                f"--out {out_dir} lies inside {display_path(root)}, a folder of the histories selected from: the copies would "
                "be read as histories of that folder next time; give a folder outside it"
            )
    if out_dir.is_dir():
        present = list(iter_history_files([out_dir]))
        if present:
            raise CorpusOutputError(
                f"--out {out_dir} already holds {len(present)} history file(s) (e.g. {present[0]}); give a new or "
                "empty folder, so the kept set is not mixed with older histories"
            )


def plan_copies(kept: Sequence[Path], roots: Sequence[Path], out_dir: Path) -> dict[Path, Path]:
    """Kept history → its copy under ``out_dir`` (``refuse_out_dir`` first); ``CorpusOutputError`` when two
    kept histories would be written to one place."""
    refuse_out_dir(out_dir, roots)
    targets: dict[Path, Path] = {}
    taken: dict[Path, Path] = {}
    for source in kept:
        target = out_dir / relative_place(source, roots)
        if target in taken:
            raise CorpusOutputError(
                f"two kept histories would be written to {target}: {taken[target]} and {source}; select each folder "
                "on its own (one corpus run per folder)"
            )
        taken[target] = source
        targets[source] = target
    return targets


def copy_kept(targets: dict[Path, Path]) -> CopyReport:
    """Copy each kept history to its place, and every blob its events reference (``result_ref``) from the
    store beside it into the store beside the copy (so a neutral history keeps loading)."""
    report = CopyReport()
    copied_blobs: set[Path] = set()
    for source, target in targets.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        report.histories.append(target)
        for blob in sorted(blob_files(source)):
            destination = BlobStore.beside(target).root / blob.parent.name / blob.name
            if destination in copied_blobs:
                continue
            if not blob.is_file():
                report.missing_blobs.append(f"{source} names blob {blob.name}, which is not in {blob.parent}")
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(blob, destination)
            copied_blobs.add(destination)
            report.blobs += 1
    return report


@dataclass
class PruneReport:
    deleted: list[Path] = field(default_factory=list)
    not_deleted: list[tuple[Path, str]] = field(default_factory=list)  # (history, why it was not deleted)


def delete_dropped(dropped: Sequence[Path]) -> PruneReport:
    """Delete the dropped histories (``--prune``); the blob stores are left as they are. A history that
    cannot be deleted is listed with the reason and the others are still deleted: stopping at the first
    would leave the rest of the prune undone for no gain, and every failure is reported either way."""
    report = PruneReport()
    for path in dropped:
        try:
            path.unlink()
        except OSError as error:
            report.not_deleted.append((path, error.strerror or str(error)))
            continue
        report.deleted.append(path)
    return report
