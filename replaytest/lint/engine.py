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

How a run goes: every file is read once (unless the file index of a warm run knows it: same stat, same bytes,
``cache.FileIndex``) and *screened* on its bytes (does it mention a framework,
a configured decorator or an idempotency-key name?). Screened-in files are parsed once by CPython's ``ast`` and
summarised by one batched pass (``collector``); summaries are cached by content. The files to parse
go to a process pool when that finishes sooner (``default_workers``: the estimated work against the idle
CPUs, measured while the run screened its files; forked workers inherit the parser and the context).
Screened-out files are parsed only if orchestration code calls into them, during resolution (``resolve``).
Diagnostics then pass selection, suppression comments and get line-independent fingerprints.

This module holds the run itself (``LintRun``: reading, the cache, lazy summaries; ``lint_paths``); one file's
parse and summary is ``summarise``, the pool and its CPU meter ``pool``, the diagnostics of a resolved program
``diagnostics``, selection, suppressions and fingerprints ``finish``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from replaytest.config import CATEGORIES, Config, ConfigError, declared_python
from replaytest.fileio import NotRegularFileError, read_regular
from replaytest.lint import diagnostics, pool, scope, summarise
from replaytest.lint import finish as finishing
from replaytest.lint.cache import (
    COMMENTED,
    SCREENED,
    VETTED,
    FileIndex,
    SummaryCache,
    entry_binding,
    fingerprint_digest,
    summary_key,
    vetted_key,
    vetted_prefix,
)
from replaytest.lint.context import LintContext
from replaytest.lint.discovery import (
    ModuleNamer,
    SourceFile,
    WalkProblem,
    WalkWatch,
    display_path,
    resolve_source_roots,
    walk,
)
from replaytest.lint.filtering import Suppression, parse_suppressions, unknown_selectors
from replaytest.lint.model import Diagnostic, LintResult, ModuleSummary
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.resolve import Program
from replaytest.lint.rule import Rule
from replaytest.lint.rules import load_rules
from replaytest.records import Record, factory

# ``summarise_source`` and ``default_workers`` stay importable from here: the documented API names them here.
summarise_source = summarise.summarise_source
default_workers = pool.default_workers

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


class LintRun(Record):
    """The state of one ``lint_paths`` run: files, cache, file index and the summaries loaded so far."""

    context: LintContext
    cache: SummaryCache | None
    namer: ModuleNamer
    files: list[SourceFile]
    cwd: Path
    by_module: dict[str, SourceFile] = factory(dict)
    summaries: dict[Path, ModuleSummary] = factory(dict)
    read_errors: dict[Path, str] = factory(dict)
    # Suppression comments of every file of the run, found when the file is first read.
    comments: dict[Path, list[Suppression]] = factory(dict)
    # Files whose text comes from stdin (``lint - --stdin-filename``), by absolute path: never read from disk.
    stdin: Mapping[Path, bytes] = factory(dict)
    # What earlier runs learnt of each file by its stat (None without the cache): a known file is not read.
    index: FileIndex | None = None
    _fingerprint_digest: str | None = None

    def __init__(
        self, context: LintContext, cache: SummaryCache | None, namer: ModuleNamer, files: list[SourceFile], cwd: Path,
        by_module: dict[str, SourceFile] | None = None, summaries: dict[Path, ModuleSummary] | None = None,
        read_errors: dict[Path, str] | None = None, comments: dict[Path, list[Suppression]] | None = None,
        stdin: Mapping[Path, bytes] | None = None, index: FileIndex | None = None,
        _fingerprint_digest: str | None = None,
    ) -> None:
        self.context = context
        self.cache = cache
        self.namer = namer
        self.files = files
        self.cwd = cwd
        self.by_module = {} if by_module is None else by_module
        self.summaries = {} if summaries is None else summaries
        self.read_errors = {} if read_errors is None else read_errors
        self.comments = {} if comments is None else comments
        self.stdin = {} if stdin is None else stdin
        self.index = index
        self._fingerprint_digest = _fingerprint_digest

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

    def cached_or_none(self, source: SourceFile, digest: str) -> tuple[str, ModuleSummary | None]:
        """The cache key of ``source`` with the bytes of sha256 ``digest``, and its cached summary if any."""
        key = summary_key(self.context.fingerprint, source.module, source.is_package, digest)
        if self.cache is None:
            return key, None
        return key, self.cache.get(key, str(source.path), self.binding(digest))

    def binding(self, digest: str) -> str:
        if self._fingerprint_digest is None:
            self._fingerprint_digest = fingerprint_digest(self.context.fingerprint)
        return entry_binding(self._fingerprint_digest, digest)

    def summarise_now(self, source: SourceFile, data: bytes | None, digest: str | None = None) -> ModuleSummary | None:
        """The summary of ``source``: cached by ``digest`` (the sha256 of ``data``, which is read when not given
        and needed), else computed and cached. None when the file cannot be read."""
        if digest is None:
            if data is None:
                data = self.read(source.path)
                if data is None:
                    return None
            digest = hashlib.sha256(data).hexdigest()
        key, summary = self.cached_or_none(source, digest)
        if summary is None:
            data = data if data is not None else self.read(source.path)
            if data is None:
                return None
            summary = summarise.summarise_source(self.context, str(source.path), source.module, source.is_package, data)
            if self.cache is not None:
                self.cache.put(key, summary, self.binding(digest))
        return summary

    def known(self, source: SourceFile) -> tuple[str, str] | None:
        """(digest, verdicts) of a file the index knows unchanged; None when it must be read."""
        if self.index is None or source.path in self.stdin:
            return None
        found = self.index.lookup(str(source.path))
        return None if found is None else (found[0], found[1])

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
        known = self.known(source)
        summary = self.summarise_now(source, None, known[0] if known is not None else None)
        if summary is None:
            return None
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
    reachable_from: Sequence[Path] | None = None,
) -> LintResult:
    """Lint files and directories; see the module docstring. ``profiles`` are framework profiles or
    plugins carrying one; ``jobs`` None picks serial or a pool by the amount to parse, N forces N workers.
    ``stdin`` is (the path a file would have, its text) for one file read from stdin: linted as if it were
    at that path (module name, exclude, per-file-ignores), whether or not a file is there.
    ``reachable_from`` (files, relative to ``cwd`` or absolute): the result narrowed to the findings in or
    through them (``scope.reachable_from``, what ``--whole-project`` reports), whose fixes alone are checked."""
    meter = pool.CpuMeter() if jobs is None else None
    cwd = cwd or Path.cwd()
    context = context or build_context(config, profiles)
    check_config_selectors(config, context.rules)
    namer = ModuleNamer(config.root, _source_roots(config))
    skipped: list[str] = []
    from_stdin = {Path(os.path.abspath(cwd / stdin[0])): stdin[1]} if stdin is not None else {}
    # A folder replaytest may not take is a configuration error before anything is read from it.
    cache = SummaryCache(config.cache_folder()) if use_cache else None
    index = FileIndex(config.cache_folder(), file_index_header(context.fingerprint)) if use_cache else None
    files, problems = _walk(paths, config, cwd, namer, skipped, tuple(from_stdin), index)
    nothing_left = _nothing_left(paths, files, problems, skipped, cwd)
    run = LintRun(context, cache, namer, files, cwd, stdin=from_stdin, index=index)
    for source in files:
        for name in (source.module, *source.other_names):
            run.by_module.setdefault(name, source)

    screened: list[SourceFile] = []
    pending: list[tuple[SourceFile, str, bytes]] = []
    prefixes = {code.rstrip("0123456789") for code in context.rules}
    digests: dict[str, str] = {}
    vet_prefix = vetted_prefix(context.fingerprint)
    for source in files:
        known = run.known(source)
        data: bytes | None = None
        # A file with suppression comments is read for them anyway, and then its bytes decide, as for a file
        # the index does not know.
        if known is not None and COMMENTED not in known[1] and (VETTED in known[1] or SCREENED in known[1]):
            # Unchanged since a run that read it: its digest and verdicts are the index's.
            digest = digests[source.display] = known[0]
            if VETTED in known[1]:
                continue
        else:
            looked_at = time.time_ns()
            status = _stat(source.path) if index is not None and source.path not in from_stdin else None
            data = run.read(source.path)
            if data is None:
                continue
            digest = digests[source.display] = hashlib.sha256(data).hexdigest()
            verdicts = ""
            if b"replaytest" in data or b"noqa" in data or b"NOQA" in data:
                run.comments[source.path] = parse_suppressions(finishing.decode(data), prefixes)
                verdicts = COMMENTED
            elif source.path in from_stdin:  # its comments are these, not those of a file at its path
                run.comments[source.path] = []
            vet_key = vetted_key(vet_prefix, digest) if cache is not None else ""
            if cache is not None and cache.is_vetted(vet_key):
                # Vetted before with this analyzer (the key holds its fingerprint): screened out and accepted by
                # CPython, so neither the screen nor the parser needs to see it again.
                if index is not None:
                    index.record(str(source.path), status, digest, verdicts + VETTED, looked_at)
                continue
            if not context.screen(data):
                # No rule needs it parsed, but a file lint was asked to check is never called checked when
                # it is not Python: CPython's parser vets it, and a file it rejects is summarised for the error.
                # The verdict is cached by content, so a warm run vets only what changed.
                if summarise.compiles(data, str(source.path)):
                    if cache is not None:
                        cache.add_vetted(vet_key)
                    if index is not None:
                        index.record(str(source.path), status, digest, verdicts + VETTED, looked_at)
                    continue
                vetted = run.summarise_now(source, data, digest)
                if vetted is not None and vetted.error is not None:
                    run.summaries[source.path] = vetted
                continue
            if index is not None:
                index.record(str(source.path), status, digest, verdicts + SCREENED, looked_at)
        key, summary = run.cached_or_none(source, digest)
        if summary is None and data is None:
            data = run.read(source.path)
            if data is None:
                continue
        screened.append(source)
        if summary is not None:
            run.summaries[source.path] = summary
        else:
            assert data is not None
            pending.append((source, key, data))
    notes: list[str] = []
    for (source, key, data), summary in zip(pending, pool.summarise_all(context, pending, jobs, notes, progress, meter)):
        run.summaries[source.path] = summary
        if cache is not None:
            cache.put(key, summary, run.binding(digests[source.display]))
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
            raw.extend((source, d) for d in diagnostics.file_diagnostics(run, program, source))
        except Exception as error:  # never abort the run for one file
            raw.append((source, diagnostics.internal_error(source, error)))
    try:
        raw.extend(diagnostics.helper_key_diagnostics(run, program))
    except Exception as error:  # never abort the run for one analysis
        raw.append((files[0], diagnostics.internal_error(files[0], error)))
    try:
        raw.extend(diagnostics.graph_node_diagnostics(run, program))
    except Exception as error:  # never abort the run for one analysis
        raw.append((files[0], diagnostics.internal_error(files[0], error)))
    # Files of the run parsed lazily during resolution report their own problems too.
    for source in files:
        summary = run.summaries.get(source.path)
        if source.path not in screened_paths and summary is not None and summary.error is not None:
            raw.append((source, diagnostics.error_diagnostic(source, summary.error, context)))

    if cache is not None:
        cache.save_pack()  # after resolution, which may have loaded summaries of files outside the run
    if index is not None:
        walked = [os.path.abspath(cwd / path) for path in paths if (cwd / path).is_dir()]
        index.forget_unseen(walked, {str(source.path) for source in files})
        index.save()
    notes.extend(_unresolved_notes(program, namer, cwd))
    notes.extend(_newer_grammar_notes(files, run.summaries, config))
    changed = None if reachable_from is None else [cwd / path for path in reachable_from]
    wanted = None if changed is None else scope.wanted_paths(changed, cwd)
    raw = diagnostics.offerable_fixes(raw, from_stdin, None if wanted is None else
                                      (lambda diagnostic: scope.concerns(diagnostic, wanted)))
    result = finishing.finish(raw, files, problems, config, cwd, context, run.comments)
    result.source_digests = digests
    if nothing_left is not None:
        explicit_only, message = nothing_left
        if explicit_only:
            notes.append(message)
        else:
            result.problems.append(message)
            result.errors += 1
    result.notes = notes
    if changed is not None:
        result = scope.reachable_from(result, changed, cwd)
    return result


def _walk(
    paths: Sequence[Path], config: Config, cwd: Path, namer: ModuleNamer, skipped: list[str],
    virtual: tuple[Path, ...], index: FileIndex | None,
) -> tuple[list[SourceFile], list[WalkProblem]]:
    """``walk``, or the files of the last walk with the same arguments and settings when the file index holds
    it and nothing it depended on changed (see ``FileIndex.walk``): no folder listed, no file named again.
    Kept only for folder arguments whose walk met no symbolic link and no unreadable folder."""
    if index is None or virtual:
        return walk(paths, root=config.root, exclude=config.exclude, cwd=cwd, namer=namer,
                    force_exclude=config.force_exclude, respect_gitignore=config.respect_gitignore,
                    skipped=skipped, virtual=virtual)
    key = hashlib.sha256(json.dumps([
        [os.path.abspath(path) for path in paths], os.fspath(config.root), list(config.exclude),
        config.force_exclude, config.respect_gitignore, os.path.abspath(cwd), namer.walked_folders(),
    ]).encode("utf-8", "surrogateescape")).hexdigest()
    record = index.walk(key)
    if record is not None:
        try:
            files = [SourceFile(Path(path), display, module, bool(is_package), tuple(others))
                     for path, display, module, is_package, others in record["files"]]
            left_out = [str(display) for display in record["skipped"]]
            listings = {str(folder): ([str(name) for name in folders], [str(name) for name in others])
                        for folder, (folders, others) in record["listings"].items()}
            namer.restore_walked([str(folder) for folder in record["import_roots"]],
                                 [str(folder) for folder in record["candidate_dirs"]])
            namer.take_listings(listings)
            skipped.extend(left_out)
            return files, []
        except (KeyError, TypeError, ValueError):  # a damaged record: walk as without one
            pass
    looked_at = time.time_ns()
    watch = WalkWatch()
    files, problems = walk(paths, root=config.root, exclude=config.exclude, cwd=cwd, namer=namer,
                           force_exclude=config.force_exclude, respect_gitignore=config.respect_gitignore,
                           skipped=skipped, watch=watch)
    payload = None
    if not watch.unsure and not problems:
        namer.take_listings(watch.listings)
        import_roots, candidate_dirs = namer.walked_folders()
        payload = {
            "files": [[str(source.path), source.display, source.module, source.is_package, list(source.other_names)]
                      for source in files],
            "skipped": skipped, "import_roots": import_roots, "candidate_dirs": candidate_dirs,
            "listings": watch.listings,
        }
    # Whether the folders outside the listed ones (above the arguments) hold an ``__init__.py``: it named the
    # files below them. A listed folder's own listing already decides that.
    listed = {folder for folder, _ in watch.folders}
    markers = [(os.path.join(folder, "__init__.py"), "file" if held else "none")
               for folder, held in namer.package_markers().items() if folder not in listed]
    index.record_walk(key, [*watch.folders, *watch.opened, *markers], payload, looked_at)
    return files, problems


def file_index_header(fingerprint: str) -> str:
    """The first line of ``files.txt``: what the index's verdicts were made under (the analyzer fingerprint
    and the running Python, as for the vetting verdicts); an index under another header is not used."""
    return f"replaytest-file-index 2 {hashlib.sha256(vetted_prefix(fingerprint)).hexdigest()[:32]}"


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


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


def _newer_grammar_notes(files: list[SourceFile], summaries: dict[Path, ModuleSummary], config: Config) -> list[str]:
    """Files the running Python rejected and lint read with a newer grammar: a note for each that needs a
    newer Python than the project declares as its oldest (their findings are reported all the same; that the
    code does not run on the declared Python is a finding for a syntax checker such as ruff, not a replay one)."""
    newer = [(source, summaries[source.path].grammar) for source in files
             if source.path in summaries and summaries[source.path].grammar]
    if not newer:
        return []
    declared = declared_python(config.root)
    notes = []
    for source, grammar in newer:
        major, minor = (int(part) for part in grammar.split("."))
        if declared is not None and declared.oldest < (major, minor):
            oldest = f"{declared.oldest[0]}.{declared.oldest[1]}"
            notes.append(f"{source.display} uses Python {grammar} syntax, but the project's {declared.source} "
                         f"accepts Python {oldest}, which cannot parse it; analysed with the Python {grammar} grammar")
    return notes


def _unresolved_notes(program: Program, namer: ModuleNamer, cwd: Path) -> list[str]:
    """One note per project-looking module that orchestration code reaches but no source root holds and no
    installed distribution provides, worded by whether its top-level name is a source root's own."""
    notes = []
    unresolved = namer.unresolved_project_modules(_missing_modules(program))
    importers_of = _importers_by_name(program, set(unresolved)) if unresolved else {}
    for name in unresolved:
        importers = sorted(display_path(Path(summary.path), cwd) for summary in importers_of.get(name, {}).values())
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


def _importers_by_name(program: Program, names: set[str]) -> dict[str, dict[int, ModuleSummary]]:
    """Per module name of ``names``, the summaries that import it or something inside it (an import target
    equal to the name or below it): every dotted prefix of every target that is one of ``names``. A target whose
    first part is no name's first part has no such prefix, and is skipped unsplit (most of a project's imports)."""
    index: dict[str, dict[int, ModuleSummary]] = {}
    tops = {name.partition(".")[0] for name in names}
    for summary in {id(s): s for s in program.modules.values()}.values():
        for target in {target for target in summary.aliases.values() if target.partition(".")[0] in tops}:
            prefix = target
            while True:
                if prefix in names:
                    index.setdefault(prefix, {})[id(summary)] = summary
                cut = prefix.rfind(".")
                if cut < 0:
                    break
                prefix = prefix[:cut]
    return index


def _nothing_left(
    paths: Sequence[Path], files: list[SourceFile], problems: list, skipped: list[str], cwd: Path
) -> tuple[bool, str] | None:
    """When ``exclude`` (or ``.gitignore``) leaves no file of the arguments to check: (only files were
    named, the message). Files named one by one that are all excluded (pre-commit staging only excluded
    files) are a note, as in ruff; a directory whose every Python file is excluded is a configuration
    problem (exit 2), because a run that checks nothing must not read as a pass. Folders that hold no Python
    file at all are a note too (ruff warns so): the summary alone would read as a pass of something."""
    if files or problems:
        return None
    if not skipped:
        where = ", ".join(display_path(Path(cwd, p), cwd) for p in paths)
        return True, f"no Python file found under {where}; nothing was checked"
    explicit_only = not any(Path(cwd, path).is_dir() for path in paths)
    shown = ", ".join(skipped[:3]) + (f" and {len(skipped) - 3} more" if len(skipped) > 3 else "")
    if explicit_only:
        return True, f"every file given is excluded ({shown}); nothing to check"
    return False, (f"nothing to check: `exclude` or .gitignore leaves out every Python file under "
                   f"{', '.join(display_path(Path(cwd, p), cwd) for p in paths)} ({shown})")


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


