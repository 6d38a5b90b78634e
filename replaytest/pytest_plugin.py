"""pytest plugin: collects recorded histories as test items and replays them against the current code.

* **Where histories are**: ini ``replay_paths`` (files or folders, relative to the ini file), else
  ``[tool.replaytest.replay] paths`` of the nearest pyproject.toml, else ``fixtures/histories`` under
  the rootdir when it exists *and* some current code is configured (a conventional folder with nothing
  to replay it against is left alone). Nothing configured: the plugin does nothing.
* **Exclusion**: ini ``replay_exclude`` (globs relative to the ini file), else ``[tool.replaytest.replay]
  exclude``, decided at configure time (``replay.exclusion``): excluded histories are not collected, the
  summary says how many which setting excluded; globs leaving no history at all are a usage error.
* **Nothing to replay**: configured replay paths that hold no history, and current code that cannot be
  imported, are each one usage error (exit 4), not "no tests ran" nor one failure per history.
* **Collection**: one item per history file (``path/to/run.json::replay``, marked ``replay`` so
  ``-m "not replay"`` leaves them out), found by pytest's own
  directory walk, so ``-k``, ``--lf`` and xdist work and the order is pytest's sorted order. When pytest
  runs the whole project (``testpaths``, or no arguments from the rootdir) the replay paths are added to
  its arguments unless one already covers them, so ``python -m pytest`` runs histories along with tests,
  each once. With explicit arguments, or from a subdirectory, only what pytest was pointed at runs. A file is only sniffed (first bytes)
  at collection; it is replayed when its item runs.
* **Current code**: ini ``replay_workflows`` (``module:attr`` lines), else ``[tool.replaytest.replay]
  workflows``, plus whatever ``pytest_replaytest_workflows(config)`` hooks return.
* **Outcomes**: a divergence or a history that cannot be replayed fails with the shared report as a
  plain string; a *stale* history (its workflow type has no current code) fails too, or is skipped with
  ``--replay-stale=skip``; warnings (prompt drift of a completed history, arguments that changed without
  ``--replay-strict-args``) pass with a ``ReplayWarning``. Counts travel in each report's
  ``user_properties`` so the terminal summary is right under pytest-xdist too; so does where each diverged
  history broke, for the summary's last lines (the grouped counts of ``replaytest impact``): as JSON text in
  ``replaytest-divergence-data`` and as a sentence in ``replaytest-divergence-point`` (what a junit report
  shows: ``support_agent: command-mismatch at event #3, shop/agent.py:54 (in-flight run)``, the path relative to
  the rootdir).
* **Replay coverage** (``--replay-coverage``, ini ``replay_coverage``): lines and branches of orchestration
  code the replayed histories execute, per workflow type, in the terminal summary plus coverage's HTML
  report under the cache folder. Each process (pytest-xdist workers too) writes its own data file; the
  controller combines them.
* **Sharding** (``--replay-shard I/N``): only the history items of shard I of N run (``replay.shard``: each
  history's shard is its content digest mod N), the others are deselected (pytest counts them), and the
  summary says how many of how many histories the shard took. Tests that are not histories run in every
  shard. Under pytest-xdist every worker deselects the same items, so ``-n`` and a shard combine.
* **In Python tests**: the ``replay_history`` fixture (``replay_history(path, workflows=[fn])`` returns a
  ``ReplayResult``) and the ``@pytest.mark.replay_history(path)`` marker (replays before the test body,
  fails it on divergence, result in the ``replay_result`` fixture).
* **Double run in Python tests** (``replaytest double-run`` with inputs from the test's fixtures): the
  ``double_run`` fixture (``double_run(workflow, input, steps=…, engine=…, workflows=[fn])`` returns a
  ``ReplayResult``) and the ``@pytest.mark.double_run(workflow, …)`` marker, whose input is the
  ``double_run_input`` fixture's value (or its ``input=``): run before the test body, fails it when the runs
  part or the case cannot run.
"""

from __future__ import annotations

import configparser
import functools
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from replaytest.config import HAZARD_POLICIES, PROMPT_POLICIES, PromptPolicy, one_of
from replaytest.impact.grouping import divergence_point, summary_lines
from replaytest.replay.adapter import HistoryReplayer, ReplayOptions, WorkflowSet
from replaytest.replay.coverage import ReplayCoverage
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.exclusion import ExcludeSetting, HistorySelection, nothing_left, select_histories
from replaytest.replay.report import (
    UNKNOWN_RUN_STATUS,
    display_path,
    diverged_by_run_status,
    render_text,
    run_status_lines,
)
from replaytest.replay.runner import (
    HISTORY_SUFFIX,
    WorkflowImportError,
    iter_history_files,
    load_workflows,
    replay_file,
)
from replaytest.replay.settings import PYTEST_INI_KEYS, misspelt_ini_key_problem, nearest_ini_key

if TYPE_CHECKING:
    from replaytest.config import Config
    from replaytest.gate import CoverageRun
    from replaytest.replay.shard import Shard

DEFAULT_HISTORY_DIR = "fixtures/histories"
ITEM_NAME = "replay"
_PROPERTY = "replaytest"  # user_properties key: (status, warning kinds) of one replayed history
_NOTES = "replaytest-notes"  # user_properties key: checks that could not apply to one history
_TYPE_PROPERTY = "replaytest-workflow"  # user_properties key: "<history label>\t<workflow type>"
_RUN_STATUS = "replaytest-run-status"  # user_properties key: the recorded run status ("" when unknown)
# user_properties keys of where a diverged history broke: readable text for people and junit reports (paths
# relative to the rootdir), and the same as JSON text for the grouped summary, which xdist workers send to the
# controller. junit writes every user property as str(value): a dict there would be its repr.
_DIVERGENCE_POINT = "replaytest-divergence-point"
_DIVERGENCE_DATA = "replaytest-divergence-data"
MARKER = "replay"  # every history item carries it: ``-m "not replay"`` leaves the histories out
_SHARD = "replaytest-shard"  # user_properties key: "<I/N>\t<histories collected>" of a sharded run


class ReplayWarning(UserWarning):
    """A replay passed with a warning: prompt drift in a completed history, or changed arguments."""


class ReplaytestHookspecs:
    @pytest.hookspec
    def pytest_replaytest_workflows(self, config: pytest.Config) -> Sequence[Any]:
        """Return workflow objects (functions, classes) to replay histories against, in addition to
        the ``replay_workflows`` ini option / ``[tool.replaytest.replay] workflows``."""
        raise NotImplementedError


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(ReplaytestHookspecs)


def _addini(parser: pytest.Parser, name: str, help: str, **kwargs: Any) -> None:
    if name not in PYTEST_INI_KEYS:  # the one list misspelt keys are matched against
        raise AssertionError(f"{name} is missing from replay.settings.PYTEST_INI_KEYS")
    parser.addini(name, help, **kwargs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("replaytest", "replaytest: replay recorded workflow histories")
    group.addoption(
        "--replay-prompts",
        choices=PROMPT_POLICIES,
        default=None,
        help="what a prompt version that differs from the recorded one means, for every history status "
        "(default: fail for running/parked, warn for completed). ini: replay_prompts",
    )
    group.addoption(
        "--replay-prompts-pending",
        choices=PROMPT_POLICIES,
        default=None,
        help="a prompt a running/parked run has not reached yet that changed since the run started "
        "(default fail). ini: replay_prompts_pending",
    )
    group.addoption(
        "--replay-strict-args",
        action="store_true",
        default=None,
        help="fail on args-mismatch instead of warning. ini: replay_strict_args",
    )
    group.addoption(
        "--replay-hazards",
        choices=HAZARD_POLICIES,
        default=None,
        help="a clock/random/uuid read the runtime guards caught in orchestration code (default fail). "
        "ini: replay_hazards",
    )
    group.addoption(
        "--replay-details",
        action="store_true",
        default=None,
        help="longer divergence reports with more context. ini: replay_details",
    )
    group.addoption(
        "--replay-stale",
        choices=("fail", "skip"),
        default=None,
        help="outcome of a history whose workflow type has no current code (default fail). ini: replay_stale",
    )
    group.addoption(
        "--replay-shard",
        metavar="I/N",
        default=None,
        help="run only shard I (1-based) of N of the history items, split by content digest (a CI matrix of "
        "N jobs); other tests run in every shard",
    )
    group.addoption(
        "--replay-coverage",
        action="store_true",
        default=None,
        help="measure which lines and branches of orchestration code the histories execute. ini: replay_coverage",
    )
    _addini(parser, "replay_paths", "history files or folders to replay (relative to the ini file)", type="linelist")
    _addini(parser, "replay_workflows", "current code to replay against, module:attr per line", type="linelist")
    _addini(parser, "replay_prompts", "fail, warn or ignore prompt drift (see --replay-prompts)", default="")
    _addini(parser, "replay_prompts_pending", "fail, warn or ignore pending prompt drift (see --replay-prompts-pending)", default="")
    _addini(parser, "replay_strict_args", "fail on args-mismatch (see --replay-strict-args)", type="bool", default=False)
    _addini(parser, "replay_hazards", "fail or warn on clock/random/uuid reads in orchestration code (see --replay-hazards)", default="")
    _addini(parser, "replay_max_history_bytes", "the largest history file a replay reads, in bytes (default: "
                  "[tool.replaytest.replay] max-history-bytes)", default="")
    _addini(parser, "replay_max_blob_bytes", "the largest blob a replay reads, in bytes (default: "
                  "[tool.replaytest.replay] max-blob-bytes)", default="")
    _addini(parser, "replay_details", "longer divergence reports (see --replay-details)", type="bool", default=False)
    _addini(parser, "replay_stale", "fail or skip stale histories (see --replay-stale)", default="fail")
    _addini(parser, "replay_coverage", "measure replay coverage (see --replay-coverage)", type="bool", default=False)
    _addini(parser, "replay_exclude", "globs of history files or folders not replayed (relative to the ini file)",
                  type="linelist")


@dataclass
class _Counts:
    histories: int = 0
    passed: int = 0
    diverged: int = 0
    stale: int = 0
    error: int = 0
    prompt_drift: int = 0
    hazard_warnings: int = 0  # nondeterministic-call under replay_hazards = warn
    other_warnings: int = 0
    first_failing: str | None = None
    shard_reported: int = 0  # replayed histories whose reports carried the shard (xdist controller)
    notes: dict[str, int] = field(default_factory=dict)
    # Diverged histories per recorded run status (``report.diverged_by_run_status``'s keys).
    diverged_by_run_status: dict[str, int] = field(default_factory=lambda: diverged_by_run_status(()))


@dataclass(eq=False)
class ReplaySession:
    """Per-run state of the plugin (in ``config.stash``, and registered as a plugin for the reporting
    hooks): settings, lazily loaded replayers and code, and the counts for the terminal summary."""

    config: pytest.Config
    paths: tuple[Path, ...]
    workflow_specs: tuple[str, ...]
    specs_from_ini: bool
    options: ReplayOptions
    stale: str
    base: Path
    counts: _Counts = field(default_factory=_Counts)
    coverage: CoverageRun | None = None  # --replay-coverage
    workflow_of: dict[str, str] = field(default_factory=dict)  # history label -> workflow type
    coverage_text: str = ""
    selection: HistorySelection = field(default_factory=HistorySelection)  # what the exclude globs left out
    # Where each diverged history broke (``impact.grouping.divergence_point``), for the grouped summary lines.
    divergence_points: list[dict[str, Any]] = field(default_factory=list)
    shard: Shard | None = None  # --replay-shard
    shard_taken: int | None = None  # histories this process's collection kept for the shard (None: not here)
    shard_of: int = 0  # histories collected before the shard was taken
    _excluded: frozenset[str] = frozenset()
    _prefixes: tuple[str, ...] = ()
    _replayers: list[HistoryReplayer] | None = None
    _workflows: WorkflowSet | None = None

    def __post_init__(self) -> None:
        self._prefixes = tuple(_prefix(path) for path in self.paths)
        self._excluded = frozenset(os.path.normcase(os.path.abspath(item.path)) for item in self.selection.excluded)

    def excluded(self, path: Path) -> bool:
        """``path`` is a history the exclude globs leave out: it is not collected."""
        return bool(self._excluded) and os.path.normcase(os.path.abspath(path)) in self._excluded

    def covers(self, path: Path) -> bool:
        """``path`` is a replay path or below one, and not inside a ``blobs`` store under it."""
        text = os.path.normcase(str(path))
        for prefix in self._prefixes:
            if text == prefix[:-1]:
                return True
            if text.startswith(prefix):
                return "blobs" not in text[len(prefix) :].split(os.sep)[:-1]
        return False

    def replayers(self) -> list[HistoryReplayer]:
        if self._replayers is None:
            # Imported here: loading plugins may import framework SDKs, and a run without histories
            # should not pay for that.
            from replaytest.plugins import load_plugins

            self._replayers = [plugin.replayer for plugin in load_plugins() if plugin.replayer is not None]
        return self._replayers

    def workflows(self) -> WorkflowSet:
        if self._workflows is None:
            extra = [obj for objects in self.config.hook.pytest_replaytest_workflows(config=self.config) for obj in objects]
            self._workflows = load_workflows(self.workflow_specs, self.base, extra)
        return self._workflows

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count replayed histories from reports (on the xdist controller they arrive from workers)."""
        if report.when != "call" or not report.user_properties:
            return  # every test's three reports come here: the others cost one comparison
        # The first value of each key, as the item appended them (one pass: this runs for every item).
        properties: dict[str, object] = {}
        for key, value in report.user_properties:
            properties.setdefault(key, value)
        label_type = properties.get(_TYPE_PROPERTY)
        if isinstance(label_type, str):
            label, _, workflow_type = label_type.partition("\t")
            self.workflow_of[label] = workflow_type
        value = properties.get(_PROPERTY)
        if not isinstance(value, str):
            return
        shard = properties.get(_SHARD)
        if isinstance(shard, str) and self.shard_taken is None:
            # The xdist controller collects nothing: the workers' reports say what the shard took.
            self.shard_of = int(shard.partition("\t")[2] or 0)
            self.counts.shard_reported += 1
        counts = self.counts
        notes = properties.get(_NOTES)
        for note in notes if isinstance(notes, list) else ():
            counts.notes[str(note)] = counts.notes.get(str(note), 0) + 1
        status, _, kinds = value.partition(";")
        counts.histories += 1
        if status in ("passed", "diverged", "stale", "error"):
            setattr(counts, status, getattr(counts, status) + 1)
        for kind in filter(None, kinds.split(",")):
            if kind == "prompt-drift":
                counts.prompt_drift += 1
            elif kind == "nondeterministic-call":
                counts.hazard_warnings += 1
            else:
                counts.other_warnings += 1
        if status == "diverged":
            run_status = properties.get(_RUN_STATUS, "")
            key = run_status if isinstance(run_status, str) and run_status in counts.diverged_by_run_status else UNKNOWN_RUN_STATUS
            counts.diverged_by_run_status[key] += 1
        point = properties.get(_DIVERGENCE_DATA)
        if isinstance(point, str):
            import json

            self.divergence_points.append(json.loads(point))
        if status != "passed" and counts.first_failing is None:
            counts.first_failing = report.nodeid.split("::")[0]

    def measure(self) -> ReplayCoverage | None:
        """The running replay-coverage measurement of this process, started on first use."""
        run = self.coverage
        if run is None:
            return None
        if run.measure is None:
            from replaytest.plugins import load_plugins

            profiles = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]
            run.start(self.workflows(), profiles, parallel=True)
        return run.measure

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.coverage is not None and not hasattr(self.config, "workerinput"):
            # The controller (or the only process) clears the last run's data before workers write theirs.
            for old in self.coverage.data_file.parent.glob(self.coverage.data_file.name + "*"):
                old.unlink()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.coverage is None:
            return
        self.coverage.stop()
        if hasattr(self.config, "workerinput"):
            return  # the controller combines and reports
        from replaytest.gate import workflow_files
        from replaytest.lint.regions import orchestration_regions
        from replaytest.plugins import load_plugins
        from replaytest.replay.coverage import combine_data

        combine_data(self.coverage.data_file)
        if not self.coverage.data_file.exists():
            self.coverage_text = "replay coverage: no history was replayed"
            return
        profiles = [plugin.profile for plugin in load_plugins() if plugin.profile is not None]
        self.coverage.regions = orchestration_regions(workflow_files(self.workflows()), self.coverage.config, profiles)
        _, self.coverage_text, _ = self.coverage.report(self.workflow_of, Path.cwd())

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        counts = self.counts
        if not counts.histories and not self.selection.excluded and not self.selection.notes() and self.shard is None:
            return
        terminalreporter.section("replaytest")
        self._exclusion_summary(terminalreporter)
        if self.shard is not None:
            taken = self.shard_taken if self.shard_taken is not None else counts.shard_reported
            terminalreporter.line(f"shard {self.shard.label}: {taken} of {self.shard_of} "
                                  f"{'history' if self.shard_of == 1 else 'histories'} (split by content digest)")
        if not counts.histories:
            return
        parts = [f"{counts.passed} passed", f"{counts.diverged} diverged", f"{counts.stale} stale"]
        if counts.error:
            parts.append(f"{counts.error} error")
        terminalreporter.line(f"replayed {counts.histories} histories: {', '.join(parts)}")
        for line in run_status_lines(counts.diverged_by_run_status):
            terminalreporter.line(line)
        terminalreporter.line(f"prompt drift: {counts.prompt_drift} warning(s)")
        if counts.hazard_warnings:
            terminalreporter.line(f"nondeterministic-call: {counts.hazard_warnings} warning(s) (replay_hazards = warn)")
        if counts.other_warnings:
            terminalreporter.line(f"args-mismatch: {counts.other_warnings} warning(s) (--replay-strict-args fails them)")
        for note, number in sorted(counts.notes.items()):
            terminalreporter.line(f"note: {number} {'history' if number == 1 else 'histories'}: {note}")
        if counts.first_failing is not None:
            command = f"replaytest replay {counts.first_failing} --details"
            if self.specs_from_ini:
                command += "".join(f" --workflows {spec}" for spec in self.workflow_specs)
            terminalreporter.line(f"next: {command}")
        for line in self.coverage_text.splitlines():
            terminalreporter.line(line)
        for line in summary_lines(self.divergence_points):
            terminalreporter.line(line)

    def _exclusion_summary(self, terminalreporter: Any) -> None:
        """How many histories which setting left out (each file with --replay-details), and the notes."""
        for origin, number in self.selection.origins():
            terminalreporter.line(f"excluded {number} {'history' if number == 1 else 'histories'} (by {origin})")
        if self.options.details:
            for item in self.selection.excluded:
                terminalreporter.line(f"  excluded {display_path(item.path)} (glob {item.pattern!r})")
        for note in self.selection.notes():
            terminalreporter.line(f"note: {note}")

    def options_for(self, prompts: str | None = None, strict_args: bool | None = None) -> ReplayOptions:
        """The session's options with a fixture's or marker's overrides."""
        options = self.options
        if prompts is not None:
            policy = _policy("prompts", prompts, ValueError)
            options = replace(options, prompts_running=policy, prompts_completed=policy)
        if strict_args is not None:
            options = replace(options, strict_args=strict_args)
        return options


# What differs between the pytest versions the plugin supports (``pytest>=7.4,<10``; the oldest is tested by
# .ci/compat-matrix, the newest by the main suite), detected by feature rather than by version number.
# ``Config.ArgsSource``'s member for "no arguments: the invocation directory" is spelt INCOVATION_DIR up to
# pytest 7.4; from 8.0 it is INVOCATION_DIR, the old spelling kept as an alias.
_ARGS_FROM_INVOCATION_DIR = getattr(pytest.Config.ArgsSource, "INVOCATION_DIR", None) or getattr(
    pytest.Config.ArgsSource, "INCOVATION_DIR"
)

_SESSION = pytest.StashKey[ReplaySession]()
_MARKED_RESULT = pytest.StashKey[ReplayResult]()
_DOUBLE_RUN_RESULT = pytest.StashKey[ReplayResult]()
# The fixture a ``double_run`` marker takes its case's input from when the marker gives no ``input=``.
DOUBLE_RUN_INPUT_FIXTURE = "double_run_input"


def _prefix(path: Path) -> str:
    return os.path.normcase(str(path)).rstrip(os.sep) + os.sep


def _policy(name: str, value: object, error: type[Exception]) -> PromptPolicy:
    """``value`` as a prompt policy, or ``error`` naming ``name`` and the policies there are."""
    for policy in PROMPT_POLICIES:
        if value == policy:
            return policy
    raise error(f"{name} must be {one_of(PROMPT_POLICIES)}, not {value!r}")


def _settings(config: pytest.Config) -> ReplaySession:
    from replaytest.config import Config, ConfigError, load_config

    try:
        project = load_config(config.rootpath)
    except ConfigError as error:
        if error.key.startswith("replay") or error.key.startswith("("):
            raise pytest.UsageError(str(error)) from None
        # A mistake in the lint settings must not stop a test run; it is the linter's to report.
        config.issue_config_time_warning(ReplayWarning(f"replay settings read without [tool.replaytest]: {error}"), 2)
        project = Config(root=config.rootpath)
    ini_base = config.inipath.parent if config.inipath else config.rootpath
    ini_paths = config.getini("replay_paths")
    if ini_paths:
        paths = [ini_base / p for p in ini_paths]
    else:
        paths = [project.root / p for p in project.replay.paths]
    ini_specs = config.getini("replay_workflows")
    specs = tuple(ini_specs) if ini_specs else project.replay.workflows
    if not paths:
        default = config.rootpath / DEFAULT_HISTORY_DIR
        has_code = bool(specs) or bool(config.pluginmanager.hook.pytest_replaytest_workflows.get_hookimpls())
        if default.is_dir() and has_code:
            paths = [default]
    prompts = config.getoption("replay_prompts") or config.getini("replay_prompts") or None
    if prompts is not None:
        prompts = _policy("replay_prompts", prompts, pytest.UsageError)
    pending = config.getoption("replay_prompts_pending") or config.getini("replay_prompts_pending") or None
    if pending is not None:
        pending = _policy("replay_prompts_pending", pending, pytest.UsageError)
    hazards = config.getoption("replay_hazards") or config.getini("replay_hazards") or project.replay.hazards
    if hazards not in HAZARD_POLICIES:
        raise pytest.UsageError(f"replay_hazards must be {one_of(HAZARD_POLICIES)}, not {hazards!r}")
    stale = config.getoption("replay_stale") or config.getini("replay_stale") or "fail"
    if stale not in ("fail", "skip"):
        raise pytest.UsageError(f"replay_stale must be fail or skip, not {stale!r}")
    from replaytest.replay.settings import declared_model_calls

    try:
        model_calls = declared_model_calls(project)
    except ConfigError as error:  # replay reads it too: a wrong value must not silently drop the note
        raise pytest.UsageError(str(error)) from None
    options = ReplayOptions(
        model_calls=model_calls,
        prompts_running=prompts or project.replay.prompts_running,
        prompts_completed=prompts or project.replay.prompts_completed,
        prompts_pending=pending or project.replay.prompts_pending,
        strict_args=bool(config.getoption("replay_strict_args") or _ini_bool(config, "replay_strict_args")
                         or project.replay.strict_args),
        details=bool(config.getoption("replay_details") or _ini_bool(config, "replay_details")),
        hazards="warn" if hazards == "warn" else "fail",
        max_history_bytes=_ini_size(config, "replay_max_history_bytes", project.replay.max_history_bytes),
        max_blob_bytes=_ini_size(config, "replay_max_blob_bytes", project.replay.max_blob_bytes),
    )
    if (ini_paths or project.replay.paths) and not any(True for _ in iter_history_files(p for p in paths if p.exists())):
        # What `check` says with exit 2; pytest's usage error is exit 4. Without it the run would collect
        # nothing and end "no tests ran" (exit 5), or pass on the other tests, without a word about why.
        setting = f"replay_paths in {config.inipath}" if ini_paths else (
            f"[{project.table_name('replay')}] paths in {project.path}")
        raise pytest.UsageError(f"no history to replay: {setting} names {', '.join(map(str, paths))}, which "
                                "holds no *.json history file (missing or empty); record or import histories "
                                "there, or remove the setting")
    selection = _selection(config, project, ini_base, paths)
    shard = None
    if config.getoption("replay_shard") is not None:
        from replaytest.replay.shard import ShardSpecError, parse_shard

        try:
            shard = parse_shard(config.getoption("replay_shard"), "--replay-shard")
        except ShardSpecError as error:
            raise pytest.UsageError(str(error)) from None
    coverage = None
    if config.getoption("replay_coverage") or _ini_bool(config, "replay_coverage"):
        from replaytest.gate import CoverageRun

        coverage = CoverageRun(project, html_dir=project.root / project.cache_dir / "replay-coverage" / "html")
    return ReplaySession(
        coverage=coverage,
        config=config,
        paths=tuple(p.resolve() for p in paths),
        workflow_specs=tuple(specs),
        specs_from_ini=bool(ini_specs),
        options=options,
        stale=stale,
        base=project.root if not ini_specs else config.rootpath,
        selection=selection,
        shard=shard,
    )


def _ini_bool(config: pytest.Config, name: str) -> bool:
    """A true/false ini option; pytest's own error for ``"maybe"`` does not say which option it read (a
    ValueError up to pytest 9.1, a UsageError from 9.2)."""
    try:
        return bool(config.getini(name))
    except (ValueError, pytest.UsageError) as error:
        where = f" in {config.inipath}" if config.inipath else ""
        raise pytest.UsageError(f"{name}{where} must be true or false: {error}") from None


def _ini_size(config: pytest.Config, name: str, configured: int) -> int:
    """A size limit from the ini option ``name``, else the ``[tool.replaytest.replay]`` one."""
    from replaytest.config import byte_limit

    value = config.getini(name)
    if not value:
        return configured
    return byte_limit(value, lambda problem: pytest.UsageError(f"{name} {problem}"))


def _selection(config: pytest.Config, project: Config, ini_base: Path, paths: Sequence[Path]) -> HistorySelection:
    """The replay paths' histories split by ini ``replay_exclude`` (relative to the ini file), else
    ``[tool.replaytest.replay] exclude`` (relative to the project root); decided here, before collection,
    so the controller of an xdist run knows it too. Globs that leave no history are a usage error."""
    from replaytest.replay.settings import ini_table

    ini_exclude = tuple(config.getini("replay_exclude"))
    if ini_exclude:
        # Named as ``replay.settings`` names it, so the CLI and pytest speak of one setting alike.
        where = f"{ini_table(config.inipath)} replay_exclude in {config.inipath}" if config.inipath else "replay_exclude"
        from replaytest.config import ConfigError

        try:
            settings = [ExcludeSetting(ini_exclude, ini_base, where)]
        except ConfigError as error:  # a glob that can match nothing: one usage error, not a crash
            raise pytest.UsageError(str(error)) from None
    elif project.replay.exclude:
        where = (f"[{project.table_name('replay')}] exclude in {project.path}" if project.path
                 else "[tool.replaytest.replay] exclude")
        settings = [ExcludeSetting(project.replay.exclude, project.root, where)]
    else:
        return HistorySelection()
    invocation = config.invocation_params.dir
    named = [invocation / arg.split("::")[0] for arg in config.args if (invocation / arg.split("::")[0]).is_file()]
    selection = select_histories(iter_history_files(p for p in paths if p.exists()), settings, named=named,
                                 force=project.force_exclude)
    left = nothing_left(selection, named_only=False)
    if left is not None:
        raise pytest.UsageError(left[1])
    return selection


def _workflows_setting(session: ReplaySession, config: pytest.Config) -> str:
    if session.specs_from_ini:
        return f"replay_workflows in {config.inipath}"
    return "[tool.replaytest.replay] workflows" if session.workflow_specs else "the pytest_replaytest_workflows hook"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "replay_history(path, workflows=None): replay a history file before the test; fails it on divergence"
    )
    config.addinivalue_line(
        "markers", f"{MARKER}: a recorded history replayed against the current code (deselect with -m 'not {MARKER}')"
    )
    config.addinivalue_line(
        "markers", "double_run(workflow, engine='journal', steps=None, workflows=None, input=<the double_run_input "
        "fixture>): run the workflow twice here and once in a second process, every step stubbed, before the "
        "test; fails it when the runs part"
    )
    for written, nearest in misspelt_ini_keys(config):
        # pytest's own "Unknown config option" does not say what was meant; a misspelt replay_paths
        # otherwise collects no history and the run exits 5 without a word about why.
        config.issue_config_time_warning(ReplayWarning(
            f"{config.inipath}: {written} {misspelt_ini_key_problem(written, nearest)}"), 2)
    session = _settings(config)
    config.stash[_SESSION] = session
    config.pluginmanager.register(session, "replaytest-session")
    if session.paths and _default_run(config):
        _add_default_args(config, session)


def misspelt_ini_keys(config: pytest.Config) -> list[tuple[str, str]]:
    """(key as written, nearest replaytest ini option) for each key of the ini file that is not an option
    pytest knows and is close to one of ours. The ini file is read here, through its public path, so
    keys of other plugins (which pytest knows) are never flagged."""
    found = []
    for key in _ini_file_keys(config.inipath):
        nearest = nearest_ini_key(key)
        if nearest is None:
            continue
        try:
            config.getini(key)
            continue  # registered by pytest or another plugin
        except ValueError:
            found.append((key, nearest))
    return found


def _ini_file_keys(path: Path | None) -> list[str]:
    """The keys of pytest's section of its ini file (pyproject.toml, pytest.ini, tox.ini, setup.cfg)."""
    if path is None:
        return []
    try:
        if path.suffix == ".toml":
            from replaytest.config import toml_parser

            with open(path, "rb") as handle:
                tool = toml_parser().load(handle).get("tool", {})
            pytest_table = tool.get("pytest", {}) if isinstance(tool, dict) else {}
            if not isinstance(pytest_table, dict):
                return []
            ini_options = pytest_table.get("ini_options", {})
            keys = [k for k in pytest_table if k != "ini_options"]
            return keys + (list(ini_options) if isinstance(ini_options, dict) else [])
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(path, encoding="utf-8")
        for section in ("pytest", "tool:pytest"):
            if parser.has_section(section):
                return list(parser[section])
    except (OSError, ValueError, configparser.Error):  # pytest has already reported an unreadable ini file
        return []
    return []


def _default_run(config: pytest.Config) -> bool:
    """pytest runs "the project" (``testpaths``, or no arguments from the rootdir); run from a
    subdirectory without arguments it runs that subdirectory only, so histories are not added."""
    source = config.args_source
    if source == pytest.Config.ArgsSource.TESTPATHS:
        return True
    return source == _ARGS_FROM_INVOCATION_DIR and config.invocation_params.dir == config.rootpath


def _add_default_args(config: pytest.Config, session: ReplaySession) -> None:
    """Append replay paths to pytest's default arguments unless an argument already covers them."""
    invocation = config.invocation_params.dir
    covering = [_prefix((invocation / arg.split("::")[0]).resolve()) for arg in config.args]
    for path in session.paths:
        text = os.path.normcase(str(path)) + os.sep
        if path.exists() and not any(text.startswith(prefix) for prefix in covering):
            config.args.append(str(path))
            covering.append(_prefix(path))


def _load_current_code(session: ReplaySession, config: pytest.Config) -> None:
    """Import the current code once, before any history runs: code that cannot be imported is one usage
    error (exit 4), not one failure per history."""
    try:
        session.workflows()
    except WorkflowImportError as error:
        raise pytest.UsageError(f"cannot load the current code to replay the histories against "
                                f"({_workflows_setting(session, config)}): {error}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Under pytest-xdist the controller collects nothing, and a usage error raised in a worker's collection
    is a crash: the controller imports the current code itself, before the workers start, when what pytest
    was pointed at reaches a replay path."""
    config = session.config
    replay = config.stash.get(_SESSION, None)
    if replay is None or not replay.paths or hasattr(config, "workerinput"):
        return
    if config.pluginmanager.has_plugin("dsession") and _args_reach_histories(config, replay):
        _load_current_code(replay, config)


def _args_reach_histories(config: pytest.Config, session: ReplaySession) -> bool:
    invocation = config.invocation_params.dir
    for arg in config.args:
        target = _prefix((invocation / arg.split("::")[0]).resolve())
        if any(_prefix(path).startswith(target) or target.startswith(_prefix(path)) for path in session.paths):
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The current code is imported once, when history items were collected (see ``_load_current_code``).
    With ``--replay-shard I/N``: deselect the other shards' histories."""
    session = config.stash.get(_SESSION, None)
    if session is None:
        return
    if any(isinstance(item, HistoryItem) for item in items):
        _load_current_code(session, config)
    if session.shard is None:
        return
    histories = [item for item in items if isinstance(item, HistoryItem)]
    others = [item for item in histories if not session.shard.takes(item.path, session.options.max_history_bytes)]
    session.shard_of = len(histories)
    session.shard_taken = len(histories) - len(others)
    if others:
        dropped = set(map(id, others))
        items[:] = [item for item in items if id(item) not in dropped]
        config.hook.pytest_deselected(items=others)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> HistoryFile | None:
    if not file_path.name.endswith(HISTORY_SUFFIX):
        return None
    session = parent.config.stash.get(_SESSION, None)
    if session is None or not session.paths or not session.covers(file_path) or session.excluded(file_path):
        return None
    # Every *.json of the replay paths is an item: one that is not a history fails with the reason
    # when it runs (the recogniser is the CLI's, ``runner.recognise``), never silently left out.
    # The name is the one pytest would derive for a file of the parent's directory (given, it spares a
    # ``Path.relative_to`` for every history; the node id is pytest's own either way).
    name = file_path.name if file_path.parent == parent.path else None
    return HistoryFile.from_parent(parent, path=file_path, name=name)


class HistoryFile(pytest.File):
    """A recorded history file: one item that replays it."""

    def collect(self) -> Iterator[HistoryItem]:
        item = HistoryItem.from_parent(self, name=ITEM_NAME)
        item.add_marker(MARKER)
        yield item


def _point_text(point: dict[str, Any], config: pytest.Config) -> str:
    """``support_agent: command-mismatch at event #3, agent.py:54 (in-flight run)``: where one history broke,
    its source path relative to the rootdir, for a junit property a person reads."""
    where = ""
    if point.get("path"):
        path = Path(point["path"])
        absolute = path if path.is_absolute() else config.invocation_params.dir / path
        try:
            shown = Path(os.path.relpath(absolute, config.rootpath)).as_posix()
        except ValueError:  # another drive (Windows): keep the path as it is
            shown = str(path)
        where = f", {shown}" + (f":{point['line']}" if point.get("line") else "")
    in_flight = point.get("in_flight")
    run = "in-flight run" if in_flight is True else "finished run" if in_flight is False else "run status unknown"
    position = point.get("position")
    at = f" at event #{position}" if position is not None else ""
    return f"{point.get('type')}: {point.get('kind')}{at}{where} ({run})"


class ReplayFailed(Exception):
    """A history that diverged, is stale or could not be replayed; ``repr_failure`` renders it."""

    def __init__(self, result: ReplayResult) -> None:
        self.result = result
        super().__init__(result.status)


class HistoryItem(pytest.Item):
    """Replays one history file against the current code."""

    @functools.cached_property
    def label(self) -> str:
        """The history's path as reports show it (``report.display_path``), worked out once per item."""
        return display_path(self.path)

    def runtest(self) -> None:
        session = self.config.stash[_SESSION]
        result: ReplayResult | None = None
        try:
            workflows = session.workflows()
            measure = session.measure()
            if measure is not None:
                with measure.history(self.label):
                    result = replay_file(self.path, session.replayers(), workflows, session.options)
            else:
                result = replay_file(self.path, session.replayers(), workflows, session.options)
        finally:
            status = result.status if result is not None else "error"
            kinds = ",".join(w.kind for w in result.warnings) if result is not None else ""
            self.user_properties.append((_PROPERTY, f"{status};{kinds}"))
            if result is not None and result.notes:
                self.user_properties.append((_NOTES, list(result.notes)))
            point = divergence_point(result) if result is not None else None
            if point is not None:
                import json

                self.user_properties.append((_DIVERGENCE_POINT, _point_text(point, self.config)))
                self.user_properties.append((_DIVERGENCE_DATA, json.dumps(point, sort_keys=True)))
            if session.shard is not None:
                self.user_properties.append((_SHARD, f"{session.shard.label}\t{session.shard_of}"))
            if result is not None:
                self.user_properties.append((_RUN_STATUS, result.run_status or ""))
                self.user_properties.append((_TYPE_PROPERTY, f"{self.label}\t{result.workflow_type}"))
        for warning in result.warnings:
            # Attributed to the line of current code that issued the command (pytest shows it), not to
            # this plugin; the history and event are in the message.
            where = warning.source
            warnings.warn_explicit(
                f"{warning.kind} at event #{warning.position} of {self.label}: {warning.message}",
                ReplayWarning,
                where.path if where else str(self.path),
                where.line if where else 0,
            )
        if result.status == "stale" and session.stale == "skip":
            pytest.skip(f"stale history: {result.error}")
        if result.status != "passed":
            raise ReplayFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ReplayFailed):
            session = self.config.stash[_SESSION]
            return render_text(excinfo.value.result, session.options.details)
        if isinstance(excinfo.value, WorkflowImportError):
            return f"{self.label}: cannot load the current code to replay against: {excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, f"replay {self.label}"


@pytest.fixture
def replay_history(request: pytest.FixtureRequest) -> Callable[..., ReplayResult]:
    """``replay_history(path, workflows=None, *, prompts=None, strict_args=None) -> ReplayResult``.

    ``path`` is relative to the rootdir unless absolute; ``workflows`` (a list of objects) defaults to
    the configured current code. Never raises for a divergence: assert on the result."""
    session = request.config.stash[_SESSION]

    def replay(
        path: str | os.PathLike[str],
        workflows: Sequence[Any] | None = None,
        *,
        prompts: str | None = None,
        strict_args: bool | None = None,
    ) -> ReplayResult:
        return _replay_one(session, path, workflows, prompts, strict_args)

    return replay


@pytest.fixture
def replay_result(request: pytest.FixtureRequest) -> ReplayResult:
    """The result of the ``@pytest.mark.replay_history(path)`` replay of this test."""
    try:
        return request.node.stash[_MARKED_RESULT]
    except KeyError:
        raise pytest.UsageError("replay_result needs @pytest.mark.replay_history(path) on the test") from None


def pytest_runtest_setup(item: pytest.Item) -> None:
    if isinstance(item, HistoryItem):
        return  # a history item is no test function to mark: spare it the walk up its nodes' markers
    marker = item.get_closest_marker("replay_history")
    if marker is None:
        return
    if not marker.args:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.replay_history needs the history path")
    session = item.config.stash[_SESSION]
    result = _replay_one(
        session,
        marker.args[0],
        marker.kwargs.get("workflows"),
        marker.kwargs.get("prompts"),
        marker.kwargs.get("strict_args"),
    )
    item.stash[_MARKED_RESULT] = result


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """A marked test whose history did not replay, or whose double run parted, fails (in the call phase: it
    is the test's verdict)."""
    for key in (_MARKED_RESULT, _DOUBLE_RUN_RESULT):
        result = item.stash.get(key, None)
        if result is not None and result.status != "passed":
            pytest.fail(render_text(result, item.config.stash[_SESSION].options.details), pytrace=False)


@pytest.fixture
def double_run(request: pytest.FixtureRequest) -> Callable[..., ReplayResult]:
    """``double_run(workflow, input=None, *, steps=None, engine="journal", workflows=None) -> ReplayResult``.

    ``replaytest double-run`` on one case: the workflow of type ``workflow`` run on ``input`` (JSON data)
    twice in this process and once in a second process under another PYTHONHASHSEED, clock, random seed and
    uuid source, every step stubbed (``steps``: the value a step of that name returns, default null).
    ``workflows`` (objects defined at a module's top level: the second process imports them by module and
    name) defaults to the configured current code. Never raises for a difference: assert on the result."""
    session = request.config.stash[_SESSION]

    def run(
        workflow: str,
        input: Any = None,  # noqa: A002 - the case's input, named as in the inputs file
        *,
        steps: Mapping[str, Any] | None = None,
        engine: str = "journal",
        workflows: Sequence[Any] | None = None,
    ) -> ReplayResult:
        return _double_run_one(session, request.node, workflow, input, steps, engine, workflows)

    return run


@pytest.fixture(autouse=True)
def _replaytest_double_run_marker(request: pytest.FixtureRequest) -> None:
    """Runs a ``@pytest.mark.double_run`` test's case once its fixtures are set up (the input may come from
    one); ``pytest_runtest_call`` fails the test on the result."""
    marker = request.node.get_closest_marker("double_run")
    if marker is None:
        return
    if len(marker.args) != 1 or not isinstance(marker.args[0], str):
        raise pytest.UsageError(f"{request.node.nodeid}: @pytest.mark.double_run needs the workflow type name")
    unknown = sorted(set(marker.kwargs) - {"engine", "steps", "workflows", "input"})
    if unknown:
        raise pytest.UsageError(f"{request.node.nodeid}: @pytest.mark.double_run takes no {', '.join(unknown)}")
    if "input" in marker.kwargs:
        value = marker.kwargs["input"]
    elif DOUBLE_RUN_INPUT_FIXTURE in request.fixturenames:
        # Requested by the test itself, so pytest parametrizes it at collection: one test per input.
        value = request.getfixturevalue(DOUBLE_RUN_INPUT_FIXTURE)
    else:
        raise pytest.UsageError(
            f"{request.node.nodeid}: @pytest.mark.double_run takes its input from the {DOUBLE_RUN_INPUT_FIXTURE!r} "
            "fixture: define it (parametrized for several inputs) and request it in the test's arguments, or give "
            "input=…"
        )
    request.node.stash[_DOUBLE_RUN_RESULT] = _double_run_one(
        request.config.stash[_SESSION], request.node, marker.args[0], value, marker.kwargs.get("steps"),
        marker.kwargs.get("engine", "journal"), marker.kwargs.get("workflows"),
    )


def _double_run_one(
    session: ReplaySession, node: pytest.Item, workflow: str, value: Any, steps: Mapping[str, Any] | None,
    engine: str, workflows: Sequence[Any] | None,
) -> ReplayResult:
    import json
    import sys

    from replaytest.double_run_cli import run_cases
    from replaytest.replay.double_run import DoubleRunCase

    try:
        json.dumps([value, dict(steps or {})])
    except (TypeError, ValueError) as error:
        raise TypeError(f"double_run: the input and the step stubs must be JSON data (they cross to the second "
                        f"process as JSON): {error}") from None
    if workflows is None:
        if not session.workflow_specs:
            raise pytest.UsageError("double_run needs workflows=[…], or current code configured in replay_workflows "
                                    "([tool.pytest.ini_options]) or [tool.replaytest.replay] workflows")
        specs, base, roots, objects = session.workflow_specs, session.base, [], session.workflows()
    else:
        found = [_importable(obj, sys.modules) for obj in workflows]
        specs = tuple(spec for spec, _ in found)
        base, roots, objects = session.config.rootpath, [root for _, root in found], load_workflows((), None, workflows)
    case = DoubleRunCase(engine=engine, workflow=workflow, input=value, origin=Path(str(node.path)),
                         workflow_id=node.nodeid, steps=dict(steps or {}))
    (result,) = run_cases([case], specs, base, objects, roots)
    return result


def _importable(obj: Any, modules: Mapping[str, Any]) -> tuple[str, Path]:
    """``module:qualname`` of an object the second process imports, and the folder its module imports from."""
    module_name = getattr(obj, "__module__", None) or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "")
    module = modules.get(module_name)
    file = getattr(module, "__file__", None)
    if not qualname or "<locals>" in qualname or module_name == "__main__" or not file:
        raise TypeError(f"double_run: {obj!r} cannot be imported by module and name in the second process; pass "
                        "workflows defined at a module's top level")
    root = Path(file).resolve().parent
    for _ in range(module_name.count(".") + (Path(file).name == "__init__.py")):
        root = root.parent
    return f"{module_name}:{qualname}", root


def _replay_one(
    session: ReplaySession,
    path: str | os.PathLike[str],
    workflows: Sequence[Any] | None,
    prompts: str | None,
    strict_args: bool | None,
) -> ReplayResult:
    history = Path(path)
    if not history.is_absolute():
        history = session.config.rootpath / history
    workflow_set = session.workflows() if workflows is None else load_workflows((), None, workflows)
    return replay_file(history, session.replayers(), workflow_set, session.options_for(prompts, strict_args))
