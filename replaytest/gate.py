"""What ``replaytest check`` (and the pytest plugin's ``--replay-coverage``) add around lint and replay:
replay coverage of orchestration code, and progress bars for long runs.

A face-level module because it joins the two sides: the linter knows which functions are orchestration
code (``lint.regions``), the replay side measures what the histories execute (``replay.coverage``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replaytest.config import Config
from replaytest.lint.regions import Region, orchestration_regions
from replaytest.replay.adapter import WorkflowSet
from replaytest.replay.coverage import (
    CoverageReport,
    ReplayCoverage,
    build_report,
    changed_lines_since,
    render_table,
    report_data,
    write_html,
)
from replaytest.replay.progress import Progress, wanted
from replaytest.replay.report import display_path

COVERAGE_DIR = "replay-coverage"


def workflow_files(workflows: WorkflowSet) -> list[Path]:
    """The source files of the modules the current code was imported from: each object's module, the
    module its ``module:attr`` spec names, and the modules a replay configuration object names (DBOS's ``DBOSReplayConfig(modules=…)``, whose own class
    lives in replaytest). A named module the engine imports only when it first replays is found along
    ``sys.path`` without importing it, so coverage started before that import still measures it."""
    files = set()
    origins = list(workflows.origins) + [""] * (len(workflows.objects) - len(workflows.origins))
    for obj, origin in zip(workflows.objects, origins):
        # The module a spec imported the object from too: a LangGraph @entrypoint is an object of
        # LangGraph's own module, defined in the project's.
        names = [getattr(obj, "__module__", "") or "", origin.partition(":")[0]]
        named = getattr(obj, "modules", ())
        if isinstance(named, (list, tuple)):
            names.extend(name for name in named if isinstance(name, str))
        for name in names:
            if name == "replaytest" or name.startswith("replaytest."):
                continue  # replaytest's own configuration classes are not the code under test
            path = getattr(sys.modules.get(name), "__file__", None) if name in sys.modules else _not_imported_source(name)
            if path and path.endswith(".py"):
                files.add(Path(path).resolve())
    return sorted(files)


def _not_imported_source(name: str) -> str | None:
    """The file ``import name`` would load first along ``sys.path``, found without importing anything."""
    if not name:
        return None
    relative = Path(*name.split("."))
    for base in sys.path:
        for candidate in (Path(base or ".") / relative.with_suffix(".py"), Path(base or ".") / relative / "__init__.py"):
            if candidate.is_file():
                return str(candidate)
    return None


@dataclass
class CoverageRun:
    """One measurement: where its data lives, which orchestration functions it covers."""

    config: Config
    html_dir: Path | None = None
    diff_base: str | None = None
    fail_under: float | None = None
    regions: list[Region] = field(default_factory=list)
    measure: ReplayCoverage | None = None

    @property
    def data_file(self) -> Path:
        return self.config.root / self.config.cache_dir / COVERAGE_DIR / ".coverage"

    def start(self, workflows: WorkflowSet, profiles: Sequence[Any], *, parallel: bool = False) -> ReplayCoverage:
        self.config.cache_folder(claim=True)  # before coverage writes its data there
        self.regions = orchestration_regions(workflow_files(workflows), self.config, profiles)
        self.measure = ReplayCoverage(self.regions, self.data_file, parallel=parallel)
        self.measure.start()
        return self.measure

    def stop(self) -> None:
        if self.measure is not None:
            self.measure.stop()

    def report(self, workflow_of: Mapping[str, str], cwd: Path) -> tuple[CoverageReport, str, bool]:
        """(report, text, gate failed). The gate fails when changed orchestration lines are covered less
        than ``fail_under`` percent (default 100 with ``diff_base``: every changed line reached)."""
        changed = None
        if self.diff_base is not None:
            changed = changed_lines_since(self.diff_base, {r.path for r in self.regions}, cwd)
        report = build_report(self.data_file, self.regions, workflow_of, changed)
        text = render_table(report, display=display_path)
        if not self.regions:
            text += "\n  no orchestration functions found in the replayed workflows' modules"
        if self.html_dir is not None:
            if write_html(self.data_file, self.regions, self.html_dir):
                text += f"\nHTML report: {display_path(self.html_dir)}/index.html"
            else:
                text += "\nno HTML report: no replayed history executed orchestration code"
        threshold = self.fail_under if self.fail_under is not None else (100.0 if self.diff_base else None)
        failed = threshold is not None and report.changed_percent < threshold
        if failed:
            text += f"\nreplay coverage of changed orchestration lines {report.changed_percent:.0f}% < {threshold:g}%"
        return report, text, failed


    def document(self, report: CoverageReport, failed: bool) -> dict[str, Any]:
        """The measurement for ``check --output-format json``: the report's data (``report_data``) with
        the gate's threshold (null without ``--fail-under``/``--diff-base``), whether it failed, and the
        HTML report's folder (null without ``--coverage-html``)."""
        threshold = self.fail_under if self.fail_under is not None else (100.0 if self.diff_base else None)
        return {
            **report_data(report, display=display_path),
            "threshold": threshold,
            "failed": failed,
            "html": display_path(self.html_dir) if self.html_dir is not None else None,
        }


def show_progress(quiet: bool) -> bool:
    return wanted(quiet)


@contextmanager
def progress(total: int, label: str, enabled: bool) -> Iterator[Callable[..., None]]:
    """A progress bar with counts on stderr over ``total`` items (``advance()`` after each one)."""
    with Progress(label, enabled) as bar:
        done = 0

        def advance(*_: object) -> None:
            nonlocal done
            done += 1
            bar.update(done, total)

        yield advance
