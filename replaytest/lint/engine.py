"""The lint run: discover files, screen, summarise (cached, in parallel), resolve, report.

Public API::

    from replaytest.config import load_config
    from replaytest.lint.engine import lint_paths
    from replaytest.plugins import load_plugins

    config = load_config(Path("."))
    plugins = load_plugins(config.frameworks)       # or their profiles: [p.profile for p in plugins]
    result = lint_paths([Path("src")], config, plugins, use_cache=True, jobs=None)
    result.diagnostics      # list[Diagnostic], sorted by path, line, column, rule
    result.files_checked    # files read (screened or parsed)
    result.errors           # files that could not be checked (syntax, unreadable, internal errors, bad paths)
    result.internal_errors  # of those, analyzer failures (rule RT002)
    result.problems         # path arguments that do not exist, as messages

How a run goes: every file is read once and *screened* on its bytes (does it mention a framework,
a configured decorator or an idempotency-key name?). Screened-in files are parsed once by libcst and
summarised by one batched pass (``collector``); summaries are cached by content. The files to parse
go to a process pool when that finishes sooner (``default_workers``: the estimated work against the idle
CPUs, measured while the run screened its files; forked workers inherit the parser and the context).
Screened-out files are parsed only if orchestration code calls into them, during resolution (``resolve``).
Diagnostics then pass selection, suppression comments and get line-independent fingerprints.
"""

from __future__ import annotations

import gc
import hashlib
import math
import os
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replaytest.config import CATEGORIES, Config, ConfigError
from replaytest.fileio import NotRegularFileError, read_regular
from replaytest.lint.cache import (
    SummaryCache,
    entry_binding,
    fingerprint_digest,
    summary_key,
    vetted_key,
    vetted_prefix,
)
from replaytest.lint.context import LintContext
from replaytest.lint.discovery import ModuleNamer, SourceFile, display_path, resolve_source_roots, walk
from replaytest.lint.filtering import (
    UNUSED_SUPPRESSION_RULE,
    Selection,
    Suppression,
    fingerprint,
    parse_suppressions,
    selector_matches,
    suppress,
    unknown_selectors,
)
from replaytest.lint.graph_nodes import RerunRegions
from replaytest.lint.model import (
    ORCHESTRATION,
    PLAIN,
    STEP,
    Diagnostic,
    Effect,
    Fix,
    FunctionSummary,
    LintResult,
    ModuleSummary,
    Span,
)
from replaytest.lint.parse_guard import Screening, run_bounded, screen_source, syntax_problem, time_limit
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.resolve import Program, Reached
from replaytest.lint.rule import Rule
from replaytest.lint.rules import INTERNAL_ERROR_RULE, SYNTAX_RULE, load_rules
from replaytest.lint.rules.rt205_rerun_before_interrupt import RepeatsEffectBeforeInterrupt

if TYPE_CHECKING:
    import libcst as cst

    from replaytest.lint.collector import ModuleCollector

__all__ = ["LintResult", "build_context", "default_workers", "lint_paths", "summarise_source"]


def build_context(
    config: Config, profiles: Sequence[Any], rules: Iterable[type[Rule]] | None = None
) -> LintContext:
    """Rules, profiles and their tables; build once per process and pass to ``lint_paths``.
    ``profiles`` may also hold framework plugins; their ``profile`` is used."""
    return LintContext(config, _profiles(profiles), load_rules() if rules is None else rules)


def _profiles(items: Sequence[Any]) -> list[FrameworkProfile]:
    """Profiles from profiles or from objects carrying one (plugins), without importing the plugin layer."""
    found = []
    for item in items:
        profile = item if isinstance(item, FrameworkProfile) else getattr(item, "profile", None)
        if profile is not None:
            found.append(profile)
    return found


# --- one file -------------------------------------------------------------------------------------


def _error_summary(module: str, path: str, rule: str, message: str, line: int = 1, column: int = 1) -> ModuleSummary:
    effect = Effect(rule, "syntax", message, "", Span(line, column, line, column))
    return ModuleSummary(module=module, path=path, error=effect)


def summarise_source(context: LintContext, path: str, module: str, is_package: bool, data: bytes) -> ModuleSummary:
    """Parse one file and summarise it; problems become an error summary, never an exception.

    CPython's parser screens the file first (``parse_guard``): what it refuses for nesting never reaches
    libcst, and a long, deep statement is parsed in a child process with a time limit."""
    screening = screen_source(data, path)
    if screening.refusal is not None:
        return _error_summary(module, path, SYNTAX_RULE, screening.refusal, screening.line, screening.column)
    if screening.risky:
        return _summarise_bounded(context, path, module, is_package, data, screening)
    return _parse_and_collect(context, path, module, is_package, data, screening.syntax_error)


def _summarise_bounded(
    context: LintContext, path: str, module: str, is_package: bool, data: bytes, screening: Screening
) -> ModuleSummary:
    import multiprocessing

    if "fork" in multiprocessing.get_all_start_methods():  # the child inherits the context as it is
        outcome = run_bounded(_parse_and_collect, (context, path, module, is_package, data, screening.syntax_error),
                              time_limit(len(data)))
    else:
        rule_classes = [type(rule) for rule in context.rules.values()]
        outcome = run_bounded(
            _parse_and_collect_fresh,
            (context.config, context.given_profiles, rule_classes, path, module, is_package, data),
            time_limit(len(data)),
        )
    if outcome.problem is not None:
        message = f"not analysed: nested too deeply for the libcst parser: {outcome.problem}"
        return _error_summary(module, path, SYNTAX_RULE, message, screening.line, 1)
    return outcome.value


def _parse_and_collect_fresh(
    config: Config, profiles: Sequence[FrameworkProfile], rules: Sequence[type[Rule]], path: str, module: str,
    is_package: bool, data: bytes,
) -> ModuleSummary:
    context = LintContext(config, profiles, rules)
    return _parse_and_collect(context, path, module, is_package, data, screen_source(data, path).syntax_error)


def _parse_and_collect(
    context: LintContext, path: str, module: str, is_package: bool, data: bytes, python_error: SyntaxError | None
) -> ModuleSummary:
    # Imported here: a run served entirely from the cache never loads the parser.
    import libcst as cst

    from replaytest.lint.collector import ModuleCollector

    try:
        tree = cst.parse_module(data)
    except cst.ParserSyntaxError as error:
        detail = str(error.message).splitlines()[0] if error.message else "invalid syntax"
        if python_error is None:
            message = f"not analysed: valid Python that the libcst parser does not support ({detail})"
            return _error_summary(module, path, SYNTAX_RULE, message, error.raw_line, error.raw_column + 1)
        if python_error.lineno:  # CPython's position and wording are the ones users know
            return _error_summary(module, path, SYNTAX_RULE, f"syntax error: {python_error.msg}",
                                  python_error.lineno, max(1, python_error.offset or 1))
        return _error_summary(module, path, SYNTAX_RULE, f"syntax error: {detail}", error.raw_line, error.raw_column + 1)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        return _error_summary(module, path, SYNTAX_RULE, f"cannot be decoded: {error}")
    except RecursionError:
        return _error_summary(module, path, SYNTAX_RULE, "too deeply nested to parse")
    except Exception as error:  # the parser itself failed: report, never abort the run
        return _error_summary(module, path, INTERNAL_ERROR_RULE, f"internal error while parsing: {error!r}")
    try:
        try:
            return ModuleCollector(context, module, path, is_package).collect(tree)
        except RecursionError:
            return _collect_deeply_nested(ModuleCollector(context, module, path, is_package), tree)
    except RecursionError:
        return _error_summary(module, path, SYNTAX_RULE, "too deeply nested to analyse")
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        return _error_summary(
            module, path, INTERNAL_ERROR_RULE,
            f"internal error while analysing: {error!r} at {Path(where.filename).name}:{where.lineno}",
        )


_DEEP_STACK_BYTES = 512 * 1024 * 1024
_DEEP_RECURSION_LIMIT = 200_000


def _collect_deeply_nested(collector: ModuleCollector, tree: cst.Module) -> ModuleSummary:
    """Collect a module whose nesting (a long ``a + b + ...`` chain, generated code) exceeds the
    default recursion limit: again, in a thread with a large stack and a high limit."""
    outcome: list[Any] = []

    def work() -> None:
        try:
            outcome.append(collector.collect(tree))
        except BaseException as error:  # handed back to the calling thread
            outcome.append(error)

    previous_limit = sys.getrecursionlimit()
    previous_stack = threading.stack_size()
    try:
        threading.stack_size(_DEEP_STACK_BYTES)
        sys.setrecursionlimit(max(previous_limit, _DEEP_RECURSION_LIMIT))
        worker = threading.Thread(target=work, name="replaytest-deep-collect")
        worker.start()
        worker.join()
    finally:
        threading.stack_size(previous_stack)
        sys.setrecursionlimit(previous_limit)
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


_WORKER_CONTEXT: LintContext | None = None


def _init_worker(config: Config, profiles: Sequence[FrameworkProfile], rules: Sequence[type[Rule]]) -> None:
    global _WORKER_CONTEXT
    _WORKER_CONTEXT = LintContext(config, profiles, rules)


def _summarise_job(job: tuple[str, str, bool, bytes]) -> ModuleSummary:
    assert _WORKER_CONTEXT is not None
    return summarise_source(_WORKER_CONTEXT, *job)


# --- the run --------------------------------------------------------------------------------------


@dataclass
class _Run:
    context: LintContext
    cache: SummaryCache | None
    namer: ModuleNamer
    files: list[SourceFile]
    cwd: Path
    by_module: dict[str, SourceFile] = field(default_factory=dict)
    summaries: dict[Path, ModuleSummary] = field(default_factory=dict)
    read_errors: dict[Path, str] = field(default_factory=dict)
    # Suppression comments of every file of the run, found when the file is first read.
    comments: dict[Path, list[Suppression]] = field(default_factory=dict)
    # Files whose text comes from stdin (``lint - --stdin-filename``), by absolute path: never read from disk.
    stdin: Mapping[Path, bytes] = field(default_factory=dict)
    _fingerprint_digest: str | None = None

    def read(self, path: Path) -> bytes | None:
        if path in self.stdin:
            data = self.stdin[path]
            if b"\0" in data:
                self.read_errors[path] = "is a binary file (contains NUL bytes), not Python source"
                return None
            return data
        try:
            data = read_regular(path)
        except IsADirectoryError:
            self.read_errors[path] = "is a directory, not a Python file"
            return None
        except NotRegularFileError as error:
            self.read_errors[path] = f"{error.strerror}; not read"
            return None
        except OSError as error:
            self.read_errors[path] = f"cannot be read: {error.strerror or error}"
            return None
        if b"\0" in data:
            self.read_errors[path] = "is a binary file (contains NUL bytes), not Python source"
            return None
        return data

    def cached_or_none(
        self, source: SourceFile, data: bytes, digest: str | None = None
    ) -> tuple[str, ModuleSummary | None]:
        key = summary_key(self.context.fingerprint, source.module, source.is_package, data)
        if self.cache is None:
            return key, None
        return key, self.cache.get(key, str(source.path), self.binding(data, digest))

    def binding(self, data: bytes, digest: str | None = None) -> str:
        if self._fingerprint_digest is None:
            self._fingerprint_digest = fingerprint_digest(self.context.fingerprint)
        return entry_binding(self._fingerprint_digest, digest or hashlib.sha256(data).hexdigest())

    def summarise_now(self, source: SourceFile, data: bytes) -> ModuleSummary:
        key, summary = self.cached_or_none(source, data)
        if summary is None:
            summary = summarise_source(self.context, str(source.path), source.module, source.is_package, data)
            if self.cache is not None:
                self.cache.put(key, summary, self.binding(data))
        return summary

    def load_module(self, name: str) -> ModuleSummary | None:
        """Lazy summary of a project module that orchestration code calls into."""
        source = self.by_module.get(name)
        if source is None:
            path = self.namer.locate(name)
            if path is None:
                return None
            module, is_package, _ = self.namer.names(path)
            source = SourceFile(path, str(path), module, is_package, ())
        summary = self.summaries.get(source.path)
        if summary is not None:
            return summary
        data = self.read(source.path)
        if data is None:
            return None
        summary = self.summarise_now(source, data)
        self.summaries[source.path] = summary
        return summary if summary.error is None else None


def lint_paths(
    paths: Sequence[Path],
    config: Config,
    profiles: Sequence[Any],
    *,
    use_cache: bool = True,
    jobs: int | None = None,
    context: LintContext | None = None,
    cwd: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    stdin: tuple[Path, bytes] | None = None,
) -> LintResult:
    """Lint files and directories; see the module docstring. ``profiles`` are framework profiles or
    plugins carrying one; ``jobs`` None picks serial or a pool by the amount to parse, N forces N workers.
    ``stdin`` is (the path a file would have, its text) for one file read from stdin: linted as if it were
    at that path (module name, exclude, per-file-ignores), whether or not a file is there."""
    meter = CpuMeter() if jobs is None else None
    cwd = cwd or Path.cwd()
    context = context or build_context(config, profiles)
    check_config_selectors(config, context.rules)
    namer = ModuleNamer(config.root, _source_roots(config))
    skipped: list[str] = []
    from_stdin = {Path(os.path.abspath(cwd / stdin[0])): stdin[1]} if stdin is not None else {}
    files, problems = walk(paths, root=config.root, exclude=config.exclude, cwd=cwd, namer=namer,
                           force_exclude=config.force_exclude, respect_gitignore=config.respect_gitignore,
                           skipped=skipped, virtual=tuple(from_stdin))
    nothing_left = _nothing_left(paths, files, problems, skipped, cwd)
    # A folder replaytest may not take is a configuration error before anything is read from it.
    cache = SummaryCache(config.cache_folder()) if use_cache else None
    run = _Run(context, cache, namer, files, cwd, stdin=from_stdin)
    for source in files:
        for name in (source.module, *source.other_names):
            run.by_module.setdefault(name, source)

    screened: list[SourceFile] = []
    pending: list[tuple[SourceFile, str, bytes]] = []
    prefixes = {code.rstrip("0123456789") for code in context.rules}
    digests: dict[str, str] = {}
    vet_prefix = vetted_prefix(context.fingerprint)
    for source in files:
        data = run.read(source.path)
        if data is None:
            continue
        digest = digests[source.display] = hashlib.sha256(data).hexdigest()
        if b"replaytest" in data or b"noqa" in data or b"NOQA" in data:
            run.comments[source.path] = parse_suppressions(_decode(data), prefixes)
        elif source.path in from_stdin:  # its comments are these, not those of a file at its path
            run.comments[source.path] = []
        if not context.screen(data):
            # No rule needs it parsed, but a file lint was asked to check is never called checked when
            # it is not Python: CPython's parser (fast) vets it, libcst only sees the ones it rejects.
            # The verdict is cached by content, so a warm run vets only what changed.
            vet_key = vetted_key(vet_prefix, digest) if cache is not None else ""
            if cache is not None and cache.is_vetted(vet_key):
                continue
            if syntax_problem(data, str(source.path)) is None:
                if cache is not None:
                    cache.add_vetted(vet_key)
                continue
            vetted = run.summarise_now(source, data)
            if vetted.error is not None:
                run.summaries[source.path] = vetted
            continue
        screened.append(source)
        key, summary = run.cached_or_none(source, data, digest)
        if summary is not None:
            run.summaries[source.path] = summary
        else:
            pending.append((source, key, data))
    notes: list[str] = []
    for (source, key, data), summary in zip(pending, _summarise_all(context, pending, jobs, notes, progress, meter)):
        run.summaries[source.path] = summary
        if cache is not None:
            cache.put(key, summary, run.binding(data, digests[source.display]))
    if cache is not None:
        cache.save_vetted()

    program = Program(context, run.load_module)
    for source in files:
        summary = run.summaries.get(source.path)
        if summary is not None and summary.error is None:
            program.add(summary, source.other_names)

    raw: list[tuple[SourceFile, Diagnostic]] = []
    screened_paths = {source.path for source in screened}
    for source in files:
        if source.path not in screened_paths and source.path not in run.read_errors:
            continue
        try:
            raw.extend((source, d) for d in _file_diagnostics(run, program, source))
        except Exception as error:  # never abort the run for one file
            raw.append((source, _internal_error(source, error)))
    try:
        raw.extend(_helper_key_diagnostics(run, program))
    except Exception as error:  # never abort the run for one analysis
        raw.append((files[0], _internal_error(files[0], error)))
    try:
        raw.extend(_graph_node_diagnostics(run, program))
    except Exception as error:  # never abort the run for one analysis
        raw.append((files[0], _internal_error(files[0], error)))
    # Files of the run parsed lazily during resolution report their own problems too.
    for source in files:
        summary = run.summaries.get(source.path)
        if source.path not in screened_paths and summary is not None and summary.error is not None:
            raw.append((source, _error_diagnostic(source, summary.error, context)))

    notes.extend(_unresolved_notes(program, namer, cwd))
    raw = _offerable_fixes(raw, from_stdin)
    result = _finish(raw, files, problems, config, cwd, context, run.comments)
    result.source_digests = digests
    if nothing_left is not None:
        explicit_only, message = nothing_left
        if explicit_only:
            notes.append(message)
        else:
            result.problems.append(message)
            result.errors += 1
    result.notes = notes
    return result


def _source_roots(config: Config) -> list[Path]:
    """The ``src`` setting's folders; an entry that matches none is a configuration error."""
    roots, unmatched = resolve_source_roots(config.root, config.src)
    if unmatched:
        raise ConfigError(config.path, "src", f"{unmatched[0]!r} matches no folder under {config.root}")
    return roots


def _missing_modules(program: Program) -> list[str]:
    """Names resolution could not load that are modules, not attributes of a loaded module: the walk also
    tries ``app.wf.Flow`` as a module before ``app.wf``, and ``Flow`` is then a class, not a missing file."""
    missing = []
    for name in program.unresolved:
        parts = name.split(".")
        for split in range(len(parts) - 1, 0, -1):
            owner = program.modules.get(".".join(parts[:split]))
            if owner is None:
                continue
            if owner.path.endswith("__init__.py") and not _binds(owner, parts[split]):
                missing.append(".".join(parts[: split + 1]))  # a submodule the package does not have
            break
        else:
            missing.append(name)
    return missing


def _binds(summary: ModuleSummary, name: str) -> bool:
    """Whether a module binds ``name`` at top level (function, class, import, instance or container)."""
    return (name in summary.aliases or name in summary.exports or name in summary.classes
            or name in summary.containers or any(key.split(".")[0] == name for key in summary.functions))


def _unresolved_notes(program: Program, namer: ModuleNamer, cwd: Path) -> list[str]:
    """One note per project-looking module that orchestration code reaches but no source root holds and no
    installed distribution provides, worded by whether its top-level name is a source root's own."""
    notes = []
    for name in namer.unresolved_project_modules(_missing_modules(program)):
        importers = sorted(
            display_path(Path(summary.path), cwd) for summary in {id(s): s for s in program.modules.values()}.values()
            if any(target == name or target.startswith(f"{name}.") for target in summary.aliases.values())
        )
        by = f" (imported by {importers[0]})" if importers else ""
        if namer.held_by_source_root(name):
            notes.append(
                f"note: cannot resolve project module {name!r}{by}; calls into it are not followed. "
                "Add its folder to `src` in [tool.replaytest] if it lives under another source root."
            )
            continue
        # Only a same-named folder deeper in the project: it may as well be a package that is not
        # installed here (the OpenAI Agents SDK's `agents` next to a sample's own `agents` folder).
        top = name.split(".")[0]
        notes.append(
            f"note: cannot resolve module {name!r}{by}: no source root holds it and no installed distribution "
            f"provides {top!r}; calls into it are not followed. If it is a third-party package, install it "
            "where replaytest runs; if it is the project's, add its folder to `src` in [tool.replaytest]."
        )
    return notes


def _summarise_all(
    context: LintContext, pending: list[tuple[SourceFile, str, bytes]], jobs: int | None, notes: list[str],
    progress: Callable[[int, int], None] | None = None, meter: CpuMeter | None = None,
) -> list[ModuleSummary]:
    """Summaries of the files to parse, in order; ``progress(done, total)`` after each one. ``meter``
    says how much CPU was idle while the run got here (``default_workers``)."""
    total = len(pending)

    def counted(summaries: Iterable[ModuleSummary]) -> list[ModuleSummary]:
        done: list[ModuleSummary] = []
        for summary in summaries:
            done.append(summary)
            if progress is not None:
                progress(len(done), total)
        return done

    job_args = [(str(source.path), source.module, source.is_package, data) for source, _, data in pending]
    if jobs is not None:
        # The user asked for this many workers: honour it whenever there are two files to share out.
        workers = min(jobs, len(job_args))
    elif len(job_args) < 2:
        workers = 1
    else:
        spare = meter.spare() if meter is not None else None
        capacity = 1 + spare if spare is not None else float(_idle_cpus())
        workers = default_workers(sum(len(job[3]) for job in job_args), len(job_args), capacity)
    if workers > 1:
        try:
            return counted(_pooled(context, job_args, workers))
        except Exception as error:  # a worker died or pools are unavailable here: finish serially, same results
            notes.append(f"process pool failed ({error!r}); continuing serially")
    return counted(summarise_source(context, *job) for job in job_args)


def _pooled(context: LintContext, job_args: list[tuple[str, str, bool, bytes]], workers: int) -> Iterator[ModuleSummary]:
    """The summaries of ``job_args`` from a pool of ``workers`` processes, in order, as they arrive.

    Where processes fork (and no other thread runs, which forking would not copy safely), the workers
    inherit the parser and this run's context (frozen for the garbage collector) instead of importing
    libcst and building a context each:
    that cost 0.2 s CPU per worker and made ``--jobs 2`` 0.7 s more CPU than ``--jobs 1`` on 785 files.
    The largest files go first, so the last chunk to finish is a small one."""
    global _WORKER_CONTEXT
    import multiprocessing

    order = sorted(range(len(job_args)), key=lambda index: -len(job_args[index][3]))
    chunk = max(1, len(job_args) // (workers * 8))
    inherit = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    froze = False
    options: dict[str, Any]
    if inherit:
        import libcst  # noqa: F401  (loaded once here, inherited by every worker)

        import replaytest.lint.collector  # noqa: F401

        _WORKER_CONTEXT = context
        options = {"mp_context": multiprocessing.get_context("fork")}
        # Frozen, the objects the workers inherit are never visited by their garbage collector, so the
        # pages holding them stay shared instead of being copied into every worker: --jobs 2 on 785 files
        # took 1.64 s CPU without, 1.52 s with (serial: 1.48 s). A host program's own freeze is left alone.
        froze = gc.get_freeze_count() == 0
        if froze:
            gc.freeze()
    else:
        rule_classes = [type(rule) for rule in context.rules.values()]
        options = {"initializer": _init_worker, "initargs": (context.config, context.given_profiles, rule_classes)}
    try:
        with _process_pool(max_workers=workers, **options) as pool:
            results: dict[int, ModuleSummary] = {}
            arrived = pool.map(_summarise_job, [job_args[index] for index in order], chunksize=chunk)
            next_index = 0
            for index, summary in zip(order, arrived):
                results[index] = summary
                while next_index in results:
                    yield results.pop(next_index)
                    next_index += 1
    finally:
        if inherit:
            _WORKER_CONTEXT = None
            if froze:
                gc.unfreeze()


def _process_pool(**options: Any) -> Any:
    """A ``concurrent.futures.ProcessPoolExecutor``, imported only by runs that start one."""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(**options)


# What summarising costs, and what a worker costs, for ``default_workers`` (measured on Temporal's samples,
# two idle cores): CPython's screen, libcst's parse and the collector take 2.0 microseconds of CPU a byte
# (0.96 s for the 478,810 bytes of its 227 orchestration modules; 1.9-2.1 for subsets of 55 and 82 KB).
# Two forked workers finished that in 0.03 s more than half the serial time in-process, and a whole
# command line spent 0.045 s more (fork, copy-on-write pages, queue traffic, the workers' exit): about
# 0.023 s a worker, counted here at twice that.
SECONDS_PER_BYTE = 2.0e-6
WORKER_COST_S = 0.05
# A pool must promise to save this share of the serial estimate: the estimate can be off, serial cannot lose.
POOL_MARGIN = 0.2


def default_workers(total_bytes: int, files: int, capacity: float) -> int:
    """How many processes summarise ``files`` files of ``total_bytes`` soonest, given ``capacity`` CPUs
    (the one this run is using plus the idle ones). Serially that takes E = bytes x SECONDS_PER_BYTE; with
    w workers taking chunks as they come, about E / min(w, capacity) + w x WORKER_COST_S. One worker
    (in-process, no pool) unless a pool saves at least POOL_MARGIN of E."""
    estimate = total_bytes * SECONDS_PER_BYTE
    best, best_time = 1, estimate
    for workers in range(2, min(files, math.ceil(capacity)) + 1):
        elapsed = estimate / min(workers, capacity) + workers * WORKER_COST_S
        if elapsed < best_time:
            best, best_time = workers, elapsed
    return best if best_time <= (1 - POOL_MARGIN) * estimate else 1


class CpuMeter:
    """Idle time of the CPUs this process may run on, between its creation and ``spare()`` (Linux,
    ``/proc/stat``): how many CPUs a pool could have now without taking them from anyone. The run is busy
    on one CPU meanwhile, so that one counts as busy. The load average is no substitute: it trails the
    last minute and counts this process and its own previous runs (measured: a default run chose serial at
    load 1.6 on two idle-but-for-us cores)."""

    STAT_PATH = "/proc/stat"
    MIN_WINDOW_S = 0.05  # /proc/stat counts in ticks of 10 ms: shorter windows say too little

    def __init__(self) -> None:
        self._cpus = {f"cpu{index}".encode() for index in _affinity()}
        self._started = time.monotonic()
        self._idle_at_start = self._idle_seconds()

    def _idle_seconds(self) -> float | None:
        try:
            with open(self.STAT_PATH, "rb") as handle:
                lines = handle.read().splitlines()
            ticks = 0
            for line in lines[1:]:
                fields = line.split()
                if not fields or not fields[0].startswith(b"cpu"):
                    break
                if fields[0] in self._cpus:
                    ticks += int(fields[4]) + int(fields[5])  # idle, iowait
            return ticks / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError, AttributeError):
            return None

    def spare(self) -> float | None:
        """Idle CPUs since creation (0.0 up to the number of CPUs); None when not measurable."""
        elapsed = time.monotonic() - self._started
        idle = self._idle_seconds()
        if idle is None or self._idle_at_start is None or elapsed < self.MIN_WINDOW_S:
            return None
        return max(0.0, min(float(len(self._cpus)), (idle - self._idle_at_start) / elapsed))


def _idle_cpus() -> int:
    """Without ``/proc/stat``: the CPUs this process may run on, less the load already on them (a worker on a
    busy core only adds start-up and pickling to the same CPU time: measured 7.7 s parallel against 4.7 s
    serial on two cores at load 11)."""
    cpus = _available_cpus()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on Unix: no load figure, assume idle
        return cpus
    return max(1, min(cpus, int(cpus - load + 0.5)))


def _available_cpus() -> int:
    return len(_affinity())


def _affinity() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return list(range(os.cpu_count() or 1))


def _error_diagnostic(source: SourceFile, error: Effect, context: LintContext) -> Diagnostic:
    rule = context.rules.get(error.rule)
    message = rule.message(error, None) if rule is not None else error.subject
    return Diagnostic(source.display, error.span.line, error.span.column, error.span.end_line, error.span.end_column,
                      error.rule, "syntax", message)


def _internal_error(source: SourceFile, error: Exception) -> Diagnostic:
    where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    at = f" at {Path(where.filename).name}:{where.lineno}" if where else ""
    return Diagnostic(source.display, 1, 1, 1, 1, INTERNAL_ERROR_RULE, "syntax",
                      f"internal error while resolving: {error!r}{at}")


def _file_diagnostics(run: _Run, program: Program, source: SourceFile) -> list[Diagnostic]:
    context = run.context
    if source.path in run.read_errors:
        return [Diagnostic(source.display, 1, 1, 1, 1, SYNTAX_RULE, "syntax", f"{source.display} {run.read_errors[source.path]}")]
    summary = run.summaries.get(source.path)
    if summary is None:
        return []
    if summary.error is not None:
        return [_error_diagnostic(source, summary.error, context)]
    diagnostics = []
    for finding in summary.findings:
        rule = context.rules[finding.rule]
        diagnostics.append(_diagnostic(source, finding.span, rule, rule.message(finding, None), None, None, ()))
    for function in summary.functions.values():
        if function.kind != ORCHESTRATION:
            continue
        profile = context.profile_by_name.get(function.framework)
        if profile is None:
            continue
        diagnostics.extend(_orchestration_diagnostics(run, program, source, summary, function, profile))
    return diagnostics


def _helper_key_diagnostics(run: _Run, program: Program) -> list[tuple[SourceFile, Diagnostic]]:
    """Fresh idempotency keys made in plain functions: findings when the function runs inside a retried
    unit — passed to a framework's step call, or called (directly or through other helpers) from a step
    or a retry-decorated function."""
    summaries = list({id(s): s for s in program.modules.values()}.values())
    if not any(function.keys for summary in summaries for function in summary.functions.values()):
        return []
    # Function -> (its summary, the function, where its keys are made: "helper, called from step x").
    reached: dict[str, tuple[ModuleSummary, FunctionSummary, str]] = {}
    queue: deque[tuple[ModuleSummary, FunctionSummary, str]] = deque()
    for summary in summaries:
        for function in summary.functions.values():
            if function.kind == STEP:
                queue.append((summary, function, f"step {function.name}"))
            elif function.retried:
                queue.append((summary, function, f"retried function {function.name}"))
        for target in summary.step_targets:
            found = program.find_function(target)
            if found is not None and found[1].kind == PLAIN:
                unit = f"{found[1].name}, which {summary.module} runs as a step"
                reached.setdefault(f"{found[0].module}.{found[1].name}", (found[0], found[1], unit))
                queue.append((found[0], found[1], f"step {found[1].name}"))
    # Breadth first from every unit, so a helper is attributed to the unit nearest to it.
    while queue:
        summary, function, unit = queue.popleft()
        for site in function.calls:
            found = program.find_function(site.target)
            if found is None or found[1].kind != PLAIN:
                continue
            name = f"{found[0].module}.{found[1].name}"
            if name not in reached:
                reached[name] = (found[0], found[1], f"{found[1].name}, called from {unit}")
                queue.append((found[0], found[1], unit))
    by_path = {str(source.path): source for source in run.files}
    diagnostics = []
    for summary, function, where in reached.values():
        source = by_path.get(summary.path)
        if source is None:
            continue
        for key in function.keys:
            rule = run.context.rules[key.rule]
            diagnostics.append((source, _diagnostic(source, key.span, rule, rule.message(key, None, via=where),
                                                    None, None, ())))
    return diagnostics


def _graph_node_diagnostics(run: _Run, program: Program) -> list[tuple[SourceFile, Diagnostic]]:
    """Effects in the part of a graph node that re-runs on resume (before its last ``interrupt()``),
    reported at the node function's line (through a helper: at the node's call, the chain in ``trace``).
    A node function in a file this run does not check is reported at the ``add_node`` call instead."""
    rule = next((r for r in run.context.rules.values() if isinstance(r, RepeatsEffectBeforeInterrupt)), None)
    if rule is None or not any(summary.graph_nodes for summary in program.modules.values()):
        return []
    by_path = {str(source.path): source for source in run.files}
    diagnostics = []
    for finding in RerunRegions(program, run.context.profile_by_name, rule.repeats).findings():
        profile = run.context.profile_by_name[finding.node.framework]
        entry = f"{finding.summary.module}.{finding.function.name}"
        source = by_path.get(finding.summary.path)
        span, via, chain = finding.span, finding.via, finding.chain
        pause_at = f"line {finding.pause.span.line}"
        if source is None:
            source = by_path.get(finding.registered_in.path)
            if source is None:
                continue
            span, via = finding.node.span, f"{finding.function.name.rsplit('.', 1)[-1]}()"
            chain = (finding.registered_in.module, *finding.chain)
            pause_at = f"{display_path(Path(finding.summary.path), run.cwd)}:{finding.pause.span.line}"
        message = rule.node_message(finding.effect, profile, finding.node.name, finding.pause.text, pause_at, via,
                                    finding.in_loop)
        trace = chain if via is not None else ()
        diagnostic = _diagnostic(source, span, rule, message, profile.name, None, trace, entry)
        if via is not None:
            diagnostic = replace(diagnostic, trace_paths=_helper_paths(program, chain[:-1], run.cwd),
                                 root=_root_of(program, Reached(finding.effect, chain)))
        diagnostics.append((source, diagnostic))
    return diagnostics


def _orchestration_diagnostics(
    run: _Run, program: Program, source: SourceFile, summary: ModuleSummary, function: FunctionSummary,
    profile: FrameworkProfile,
) -> list[Diagnostic]:
    context = run.context
    entry = f"{summary.module}.{function.name}"
    diagnostics = []
    for effect in function.effects:
        if not program.applies(effect, profile):
            continue
        rule = context.rules[effect.rule]
        fix = _fix_for(effect, function, profile)
        message = _respell_context(rule.message(effect, profile), function, profile)
        diagnostics.append(_diagnostic(source, effect.span, rule, message, profile.name, fix, (), entry))
    for site in function.calls:
        reached, direct = program.call_effects(site, profile)
        reported: set[str] = set()
        for item in reached:
            if item.effect.rule in reported:
                continue
            reported.add(item.effect.rule)
            rule = context.rules[item.effect.rule]
            if direct:
                message, trace = rule.message(item.effect, profile), tuple[str, ...]()
            else:
                message, trace = rule.message(item.effect, profile, via=site.subject), (entry, *item.chain)
            message = _respell_context(message, function, profile)
            diagnostic = _diagnostic(source, site.span, rule, message, profile.name, None, trace, entry)
            if not direct:
                diagnostic = replace(diagnostic, trace_paths=_helper_paths(program, item.chain[:-1], run.cwd),
                                     root=_root_of(program, item))
            diagnostics.append(diagnostic)
    return diagnostics


def _root_of(program: Program, item: Reached) -> tuple[str, int, int] | None:
    """The file and position of the effect at the end of a helper chain."""
    found = program.find_function(item.chain[-2]) if len(item.chain) >= 2 else None
    if found is None:
        return None
    return found[0].path, item.effect.span.line, item.effect.span.column


def _helper_paths(program: Program, helpers: tuple[str, ...], cwd: Path) -> tuple[str, ...]:
    paths = []
    for name in helpers:
        found = program.find_function(name)
        paths.append(display_path(Path(found[0].path), cwd) if found is not None else "")
    return tuple(paths)


def _respell_context(message: str, function: FunctionSummary, profile: FrameworkProfile) -> str:
    """Replacement texts spell the context parameter conventionally (``ctx.uuid()``); say it the way
    this function names it (``context.uuid()``)."""
    if not profile.context_param_names or not function.context_param:
        return message
    conventional = profile.context_param_names[0]
    if function.context_param == conventional:
        return message
    return message.replace(f"{conventional}.", f"{function.context_param}.")


def _nothing_left(
    paths: Sequence[Path], files: list[SourceFile], problems: list, skipped: list[str], cwd: Path
) -> tuple[bool, str] | None:
    """When ``exclude`` (or ``.gitignore``) leaves no file of the arguments to check: (only files were
    named, the message). Files named one by one that are all excluded (pre-commit staging only excluded
    files) are a note, as in ruff; a directory whose every Python file is excluded is a configuration
    problem (exit 2), because a run that checks nothing must not read as a pass."""
    if files or not skipped or problems:
        return None
    explicit_only = not any(Path(cwd, path).is_dir() for path in paths)
    shown = ", ".join(skipped[:3]) + (f" and {len(skipped) - 3} more" if len(skipped) > 3 else "")
    if explicit_only:
        return True, f"every file given is excluded ({shown}); nothing to check"
    return False, (f"nothing to check: `exclude` or .gitignore leaves out every Python file under "
                   f"{', '.join(display_path(Path(cwd, p), cwd) for p in paths)} ({shown})")


def _offerable_fixes(
    raw: list[tuple[SourceFile, Diagnostic]], stdin: Mapping[Path, bytes],
) -> list[tuple[SourceFile, Diagnostic]]:
    """Drop the fixes whose replacement would not mean the same at its call (``fix_scope``): an ``await``
    outside an ``async def``, a replacement name shadowed there. Only files with a fix are parsed (by ast);
    a file read from stdin is judged by that text, not by a file at its path."""
    from replaytest.lint.fix_scope import FixSites

    sites: dict[Path, FixSites | None] = {}
    kept = []
    for source, diagnostic in raw:
        if diagnostic.fix is not None:
            if source.path not in sites:
                try:
                    text = stdin[source.path] if source.path in stdin else source.path.read_bytes()
                    sites[source.path] = FixSites(text)
                except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                    sites[source.path] = None
            checker = sites[source.path]
            if checker is None or checker.problem(diagnostic.line, diagnostic.column, diagnostic.fix) is not None:
                diagnostic = replace(diagnostic, fix=None)
        kept.append((source, diagnostic))
    return kept


def check_config_selectors(config: Config, rules: Iterable[str]) -> None:
    """Every ``select``, ``ignore`` and ``per-file-ignores`` entry must name an installed rule or a category:
    a typo would otherwise turn rules off (or the whole linter, in ``select``) without a word."""
    codes = tuple(rules)
    keyed = [("select", config.select), ("ignore", config.ignore), ("fixable", config.fixable),
             ("unfixable", config.unfixable)]
    keyed += [(f"per-file-ignores.{glob}", entries) for glob, entries in config.per_file_ignores.items()]
    for key, entries in keyed:
        for entry in unknown_selectors(entries, codes, CATEGORIES):
            raise ConfigError(config.path, key, f"{entry!r} is not a known rule code, code prefix or category "
                                                "(`replaytest rules` lists them)")


def _fix_for(effect: Effect, function: FunctionSummary, profile: FrameworkProfile) -> Fix | None:
    templates = profile.fixes.get(effect.qualname)
    if templates is None:
        return None
    for template in templates if isinstance(templates, tuple) else (templates,):
        if not template.fits(effect.args):
            continue
        if "{ctx}" in template.replacement and not function.context_param:
            return None
        replacement = template.replacement.replace("{ctx}", function.context_param).replace("{args}", effect.args)
        scope = "async" if replacement.startswith("await ") else template.scope
        return Fix(template.safe_for(effect.args), replacement, template.import_from, scope)
    return None


def _diagnostic(
    source: SourceFile, span: Span, rule: Rule, message: str, framework: str | None, fix: Fix | None,
    trace: tuple[str, ...], scope: str = "",
) -> Diagnostic:
    return Diagnostic(source.display, span.line, span.column, span.end_line, span.end_column, rule.code,
                      rule.category, message, framework, fix, tuple(trace), scope=scope)


def _finish(
    raw: list[tuple[SourceFile, Diagnostic]], files: list[SourceFile], problems: list, config: Config, cwd: Path,
    context: LintContext, comments: dict[Path, list[Suppression]],
) -> LintResult:
    selection = Selection(config.select, config.ignore, config.per_file_ignores, config.root, cwd)
    prefixes = {code.rstrip("0123456789") for code in context.rules}

    def comments_of(path: Path) -> list[Suppression]:
        # A helper outside the linted files still has its suppression comments honoured at its own line.
        if path not in comments:
            try:
                text = _decode(read_regular(path))
            except OSError:
                text = ""
            wanted = "replaytest" in text or "noqa" in text.lower()
            comments[path] = parse_suppressions(text, prefixes) if wanted else []
        return comments[path]

    kept: list[Diagnostic] = []
    seen: set[tuple] = set()
    # Findings reached through a helper, by (rule, helper line): reported once, at the first call site.
    through_helpers: dict[tuple, list[Diagnostic]] = {}
    for source, diagnostic in raw:
        if not selection.keeps(diagnostic):
            continue
        if suppress(diagnostic, comments_of(source.path)):
            continue
        if diagnostic.root is not None:
            root_path, root_line, root_column = diagnostic.root
            if suppress(replace(diagnostic, line=root_line, column=root_column), comments_of(Path(root_path))):
                continue
            through_helpers.setdefault((diagnostic.rule, diagnostic.root), []).append(diagnostic)
            continue
        key = (diagnostic.path, diagnostic.line, diagnostic.column, diagnostic.rule, diagnostic.trace)
        if key in seen:
            continue
        seen.add(key)
        kept.append(diagnostic)
    for sites in through_helpers.values():
        sites.sort(key=Diagnostic.sort_key)
        first = sites[0]
        others = {(s.path, s.line, s.column): s.scope for s in sites[1:]}
        others.pop((first.path, first.line, first.column), None)
        if others:
            # The other call sites are named by function, not line, so the fingerprint survives edits elsewhere.
            plural = "s" if len(others) > 1 else ""
            names = ", ".join(sorted(set(others.values())))
            first = replace(first, message=f"{first.message} (also reached from {len(others)} other call site{plural}, in {names})")
        kept.append(first)
    messages = [f"{problem.display}: {problem.problem}" for problem in problems]
    unused, comment_errors = _check_comments(files, comments, selection, context)
    kept.extend(unused)
    messages.extend(comment_errors)
    kept = [replace(d, fingerprint=fingerprint(d.path, d.rule, d.message, d.trace, d.scope)) for d in kept]
    kept.sort(key=Diagnostic.sort_key)
    failed_files = {d.path for d in kept if d.category == "syntax"}
    internal = sum(1 for d in kept if d.rule == INTERNAL_ERROR_RULE)
    return LintResult(kept, len(files), len(failed_files) + len(problems) + len(comment_errors), internal, messages)


def _check_comments(
    files: list[SourceFile], comments: dict[Path, list[Suppression]], selection: Selection, context: LintContext
) -> tuple[list[Diagnostic], list[str]]:
    """Unknown codes in suppression comments (configuration errors, as ``file:line: ...`` messages) and
    RT003 findings for comments, or codes in them, that suppressed nothing although their rules ran."""
    codes = tuple(context.rules)
    unused_rule = context.rules.get(UNUSED_SUPPRESSION_RULE)
    checked_rules = [rule for rule in context.rules.values() if rule.category not in ("syntax", "suppression")]
    findings: list[Diagnostic] = []
    errors: list[str] = []
    for source in files:
        for comment in comments.get(source.path, ()):
            shown = f"# {comment.spelling}" + ("" if comment.selectors is None else
                                               ("[" + ", ".join(comment.selectors) + "]"
                                                if comment.spelling == "replaytest: ignore"
                                                else ": " + ", ".join(comment.selectors)))
            if comment.misplaced:
                errors.append(f"{source.display}:{comment.line}: `# replaytest: noqa` exempts the whole file and must "
                              "stand on a line of its own; to suppress findings on this line use "
                              "`# replaytest: ignore[CODE]` or `# noqa: CODE`")
            unknown = unknown_selectors(comment.selectors or (), codes, CATEGORIES)
            for entry in unknown:
                errors.append(f"{source.display}:{comment.line}: unknown rule code or category {entry!r} in "
                              f"`{shown}` (`replaytest rules` lists them)")
            if unused_rule is None or comment.whole_file or comment.misplaced:  # an exemption is never "unused"
                continue

            def probe(rule: Rule) -> Diagnostic:
                return Diagnostic(source.display, comment.line, comment.column, comment.line, comment.column,
                                  rule.code, rule.category, "")

            if not selection.keeps(probe(unused_rule)):
                continue
            enabled = [rule for rule in checked_rules if selection.keeps(probe(rule))]
            if comment.selectors is None:
                idle = [] if comment.used or not enabled else [""]
            else:
                idle = [
                    entry for entry in comment.selectors
                    if entry not in comment.used and entry not in unknown
                    and not selector_matches(entry, probe(unused_rule))
                    and any(selector_matches(entry, probe(rule)) for rule in enabled)
                ]
            if not idle:
                continue
            if comment.selectors is None or len(idle) == len(comment.selectors):
                message = f"unused suppression: `{shown}` suppresses nothing here"
            else:
                message = f"unused suppression: {', '.join(idle)} in `{shown}` suppresses nothing here"
            findings.append(Diagnostic(source.display, comment.line, comment.column, comment.line, comment.column,
                                       unused_rule.code, unused_rule.category, message))
    return findings, errors


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")
