"""Incremental replay: a history that replayed green is remembered, and skipped while nothing its
replay depended on has changed.

An entry is found by its *key*: the digest of the history file's bytes (events, recorded prompt versions,
everything), every field of ``ReplayOptions`` but the report-only ones, the ``module:attr`` specs of the
current code, replaytest's version, the Python version and the entry format's ``CACHE_VERSION``. It
holds while everything else the replay depended on is as it was:

- ``files``: the digest of each file the verdict came from — the workflow's *code closure* (the module
  the workflow object was imported from and every project module it reaches through imports, followed
  transitively), the files its modules read while they were imported (a prompt template loaded at module
  top level), the blob files the history references, the files read while it replayed, and the
  modules imported while it or an earlier history of the run replayed (an engine imports the modules its
  configuration names on first use, once per process). A file absent then must still be absent; one
  present must be unchanged.
- ``closure``: the resolved files of that code closure as a set. The current code's closure must be the
  same set of files: a spec that now imports from another file (``PYTHONPATH`` chose another copy of
  the module, a module shadowed by a same-named file earlier on ``sys.path``) is a miss even though the
  old files are unchanged.
- ``prompts``: the current code's prompt manifest for the workflow (``replaytest.prompts``).
- ``libraries``: the installed versions of the engine's libraries (``ENGINE_LIBRARIES``).

Where entries live: ``replay/passed.json`` for a run over all histories, ``replay/passed.shard-I-of-N.json``
for shard I of N (``replay.shard``). A run reads every such file of the folder and writes only its own:
a shard writes the entries of its own file and the ones it remembered, a run over all histories writes
every entry it read (the shards' merged). So N machines of a CI matrix each save their folder, and
restoring all N into one folder, or each into its own shard's next job, finds every green verdict.

A history that diverged, warned, was stale or failed is never remembered: it replays every time. Neither
is one whose replay read something no digest can vouch for (a FIFO, an unreadable file), or whose
workflow modules were imported before their import-time reads could be recorded.

When a history's workflow type matches none of the loaded objects by name, the closure is every
workflow object's modules: skipping less is the safe side.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from itertools import zip_longest
from pathlib import Path
from typing import Any

from replaytest import __version__, cachedir
from replaytest.fileio import read_regular
from replaytest.history.blobs import REF_PREFIX, BlobStore
from replaytest.history.errors import HistoryError
from replaytest.history.model import FORMAT
from replaytest.history.sniff import neutral_engine
from replaytest.prompts import prompt_manifest
from replaytest.replay.adapter import LoadedHistory, ReplayOptions, WorkflowSet
from replaytest.replay.divergence import ReplayResult
from replaytest.replay.reads import FileReads, relevant
from replaytest.replay.shard import Shard, cache_file_name, cache_file_names

# Bumped whenever an entry's meaning changes: entries of another version are never found (a miss).
CACHE_VERSION = 2
# Options that change only how a report reads, never a verdict: histories share entries across them.
REPORT_ONLY_OPTIONS = frozenset({"details"})
# The distributions whose code replays an engine's histories (site-packages is not in ``files``; its
# versions stand for it). An engine not listed (a third-party plugin's) is keyed on all of them.
ENGINE_LIBRARIES: dict[str, tuple[str, ...]] = {
    "temporal": ("temporalio",),
    "dbos": ("dbos",),
    "langgraph": ("langgraph", "langgraph-checkpoint"),
    "journal": (),  # replaytest's own runtime: replaytest's version keys every entry
}
_TYPE_ATTRIBUTES = ("__replaytest_workflow__", "__temporal_workflow_definition")


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class _Unvouched(Exception):
    """A file exists but cannot be digested (not a regular file, unreadable)."""


DIRECTORY = "directory"  # what a read folder is keyed as: its listing is not an input (see README)


def _file_digest(path: Path) -> str | None:
    """The file's digest; None if it does not exist; ``DIRECTORY`` for a folder (opened by descriptor,
    as ``shutil.rmtree`` does); ``_Unvouched`` if it exists but cannot be read as a regular file (a
    FIFO's or a device's contents differ per read: no digest vouches for them)."""
    try:
        return _digest(read_regular(path))
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None  # a parent is a file now: the file does not exist
    except OSError as error:
        if path.is_dir():
            return DIRECTORY
        raise _Unvouched(str(path)) from error


def blob_files(history: Path, loaded: LoadedHistory | None = None) -> set[Path]:
    """The blob files a neutral history's events reference (``history.blobs``). The replay reads them
    too (and the audit hook sees it), but naming them from the history keys them however loading is
    arranged around the replay. ``loaded``: the file as its replay read it (it is not read again)."""
    built = loaded.history_if_loaded() if loaded is not None else None
    if built is not None:
        # The replay validated the history already; parsing the document again would cost its size twice.
        store = BlobStore.beside(history)
        return {store.path_of(event.result_ref).resolve() for event in built.events if event.result_ref is not None}
    if loaded is not None and neutral_engine(loaded.head) is None:
        # An engine's own format (its replayer may have dropped the text): it references no blobs. A
        # neutral history not recognised by its head had its History built while it was recognised.
        return set()
    try:
        document = loaded.document() if loaded is not None else json.loads(read_regular(history))
    except (OSError, ValueError, HistoryError):
        return set()
    events = document.get("events") if isinstance(document, dict) and document.get("format") == FORMAT else None
    if not isinstance(events, list):
        return set()
    store = BlobStore.beside(history)
    refs = {event.get("result_ref") for event in events if isinstance(event, dict)}
    return {store.path_of(ref).resolve() for ref in refs if isinstance(ref, str) and ref.startswith(REF_PREFIX)}


@functools.cache  # installed versions do not change while a run looks them up for every history
def _installed_version(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def libraries_of(engine: str) -> dict[str, str | None]:
    """``{distribution: installed version or None}`` for the libraries replaying ``engine``."""
    names = ENGINE_LIBRARIES.get(engine)
    if names is None:
        names = tuple(sorted({name for group in ENGINE_LIBRARIES.values() for name in group}))
    return {name: _installed_version(name) for name in names}


def _option_value(value: Any) -> Any:
    """A JSON-able, order-stable form of an option value (sets sorted, paths as text)."""
    if isinstance(value, (set, frozenset)):
        return sorted((_option_value(item) for item in value), key=repr)
    if isinstance(value, (list, tuple)):
        return [_option_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _option_value(item) for key, item in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)  # an enum, a path, a pattern: its repr names its value


def verdict_options(options: ReplayOptions) -> dict[str, Any]:
    """Every field of ``options`` but the report-only ones, read from the dataclass itself, so that an
    option added to ``ReplayOptions`` keys the entries without anyone listing it here."""
    values = dataclasses.asdict(options)
    return {name: _option_value(value) for name, value in values.items() if name not in REPORT_ONLY_OPTIONS}


def type_names(obj: Any) -> set[str]:
    """The workflow type names an object may replay: its registered name (journal ``@workflow``,
    Temporal ``@workflow.defn``) and its own name (DBOS names workflows by function)."""
    names = {getattr(obj, "__name__", None), getattr(obj, "__qualname__", None)}
    for attribute in _TYPE_ATTRIBUTES:
        names.add(getattr(getattr(obj, attribute, None), "name", None))
    return {name for name in names if isinstance(name, str)}


def _module_file(module: Any) -> Path | None:
    path = getattr(module, "__file__", None)
    return Path(path).resolve() if path and path.endswith(".py") else None


class CodeClosure:
    """The project files a module reaches through imports (``root`` bounds the project; installed
    packages are never part of it)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._memo: dict[Path, set[Path]] = {}

    def _in_project(self, path: Path) -> bool:
        return path.is_relative_to(self.root) and "site-packages" not in path.parts and not any(
            part.startswith(".") for part in path.relative_to(self.root).parts
        )

    def files(self, start: Path) -> set[Path]:
        if start in self._memo:
            return self._memo[start]
        seen: set[Path] = set()
        pending = [start]
        while pending:
            path = pending.pop()
            if path in seen:
                continue
            seen.add(path)
            pending.extend(p for p in self._imports(path) if p not in seen)
        self._memo[start] = seen
        return seen

    def _imports(self, path: Path) -> Iterable[Path]:
        try:
            tree = ast.parse(path.read_bytes(), str(path))
        except (OSError, SyntaxError, ValueError):
            return []
        package = self._module_name(path).rpartition(".")[0] if path.name != "__init__.py" else self._module_name(path)
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".") if package else []
                    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                    base = ".".join([*parts, *([base] if base else [])])
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
        found = []
        for name in names:
            file = self._locate(name)
            if file is not None and self._in_project(file):
                found.append(file)
        return found

    def _module_name(self, path: Path) -> str:
        for module in list(sys.modules.values()):
            if _module_file(module) == path:
                return str(getattr(module, "__name__", ""))
        return path.stem

    def _locate(self, name: str) -> Path | None:
        """The file ``import name`` would load: the imported module's, else the first match along
        ``sys.path`` in its order (an installed or earlier module of the same name shadows a project
        file, as it would when the code imports it), then the project root."""
        if not name:
            return None
        module = sys.modules.get(name)
        if module is not None:
            return _module_file(module)
        relative = Path(*name.split("."))
        for base in (*(Path(p or os.curdir) for p in sys.path), self.root):
            for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
                if candidate.is_file():
                    return candidate.resolve()
        return None


class ReplayCache:
    """Green replays of earlier runs, in ``directory`` (the configuration's cache folder).

    ``import_reads`` are the files read while the workflows were imported (recorded with ``stacks``, so
    each read is attributed to the modules whose import made it); without them import-time reads are
    unknown and nothing is remembered. ``watching(path)`` records what one history's replay reads.
    With ``skip`` False the cache only records: every history replays (a coverage run measures them all)
    and the green ones are remembered for later runs, as a green replay under coverage is the same verdict."""

    def __init__(
        self, directory: Path, root: Path, workflows: WorkflowSet, options: ReplayOptions,
        import_reads: FileReads | None = None, *, skip: bool = True, shard: Shard | None = None,
    ) -> None:
        self.directory = directory.resolve()
        self.file = directory / "replay" / cache_file_name(shard)
        self.shard = shard
        self.closure = CodeClosure(root)
        self.workflows = workflows
        self.options = options
        self.import_reads = import_reads
        self.skip = skip
        salt = {
            "cache": CACHE_VERSION,
            "replaytest": __version__,
            "python": sys.version,
            "implementation": sys.implementation.name,
            "options": verdict_options(options),
            "workflows": list(workflows.origins),
        }
        self.salt = json.dumps(salt, sort_keys=True)
        self.skipped = 0
        self._replay_reads: dict[Path, FileReads] = {}
        self._late_imports: set[Path] = set()
        self._owners: list[tuple[Path, frozenset[Path]]] | None = None
        self._callers: dict[str, Path | None] = {}
        self._digests: dict[Path, str | None] = {}
        self.entries: dict[str, Any] = {}
        # The keys this run writes back to its own file (a shard leaves the other shards' files alone).
        self._own: set[str] = set()
        for file in cache_file_names(directory / "replay"):
            try:
                loaded = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # a broken or vanished file holds no verdict: its histories replay
            if isinstance(loaded, dict):
                self.entries.update(loaded)
                if file.name == self.file.name:
                    self._own.update(loaded)

    def _key(self, path: Path, loaded: LoadedHistory | None = None) -> str | None:
        if loaded is None:
            try:
                loaded = LoadedHistory.read(path, self.options)  # a file over the size limit has no key
            except OSError:
                return None
        # The file's digest stands for its bytes: the loaded history keeps no copy of them to hash here.
        return _digest(self.salt.encode() + b"\0" + loaded.digest.encode())

    def fresh(self, path: Path, loaded: LoadedHistory | None = None) -> bool:
        """True when ``path`` replayed green before and nothing that replay depended on changed.
        ``loaded`` is the file already read for its replay (then its digest is used, not read again).
        Always False for a cache that only records (``skip`` False)."""
        if not self.skip:
            return False
        key = self._key(path, loaded)
        entry = self.entries.get(key) if key is not None else None
        if not isinstance(entry, dict) or not all(isinstance(entry.get(part), dict) for part in ("files", "prompts", "libraries")):
            return False
        if entry.get("closure") != self._closure_names(str(entry.get("workflow_type"))):
            return False  # the workflow's code now comes from other files (another copy on sys.path)
        for name, digest in entry["files"].items():
            if self._current_digest(Path(name)) != digest:
                return False
        if libraries_of(str(entry.get("engine"))) != entry["libraries"]:
            return False
        if self._prompts_for(str(entry.get("workflow_type"))) != entry["prompts"]:
            return False
        self.skipped += 1
        return True

    def _current_digest(self, file: Path) -> str | None | bool:
        """A file's digest as ``fresh`` compares it (False: cannot be digested, matching no entry);
        computed once per run, since many histories share their workflow's files."""
        if file not in self._digests:
            try:
                self._digests[file] = _file_digest(file)
            except _Unvouched:
                return False
        return self._digests[file]

    @contextmanager
    def watching(self, path: Path) -> Iterator[None]:
        """Record the files read while ``path`` replays, for ``remember``."""
        reads = FileReads(stacks=True)
        with reads.recording():
            yield
        self._replay_reads[path] = reads

    def remember(self, path: Path, result: ReplayResult, loaded: LoadedHistory | None = None) -> None:
        replay_reads = self._replay_reads.pop(path, None)
        # The history's bytes are in the key; the cache folder is replaytest's own state (this file, the
        # lint cache), rewritten by every run: neither is an input to watch.
        leave_out = (path.resolve(), self.directory)
        if replay_reads is not None:
            # A module imported while this history replayed (an engine importing the project modules its
            # configuration names) is imported once per process: every later history runs that code too,
            # whatever this one's verdict.
            late = (relevant(name, leave_out) for name in replay_reads.during_imports())
            self._late_imports.update(file for file in late if file is not None)
        if result.status != "passed" or result.warnings or replay_reads is None or self.import_reads is None:
            return
        key = self._key(path, loaded)
        if key is None:
            return
        modules = self._modules_for(result.workflow_type)
        if not modules or not all(module in self.import_reads.imported for module in modules):
            return  # nothing to watch, or a module imported before its import-time reads were recorded
        closure = self._closure_of(result.workflow_type)
        files = set(closure)
        files.update(self._import_reads_of(closure, leave_out[0]))
        files.update(file for file in (relevant(name, leave_out) for name in replay_reads.files) if file is not None)
        files.update(self._late_imports)
        files.update(blob_files(path, loaded))
        try:
            digests = {str(file): _file_digest(file) for file in sorted(files)}
        except _Unvouched:
            return
        self._own.add(key)
        self.entries[key] = {
            "history": str(path),
            "workflow_type": result.workflow_type,
            "engine": result.engine,
            "files": digests,
            "closure": self._closure_names(result.workflow_type),
            "prompts": self._prompts_for(result.workflow_type),
            "libraries": libraries_of(result.engine),
        }

    def _closure_of(self, workflow_type: str) -> set[Path]:
        """The current code closure of the workflow type: its modules' files and the project files they
        import, each as the file it resolves to now."""
        closure: set[Path] = set()
        for module_file in self._modules_for(workflow_type):
            closure |= self.closure.files(module_file)
        return closure

    def _closure_names(self, workflow_type: str) -> list[str]:
        """``_closure_of`` as an entry stores it: sorted resolved paths."""
        return sorted(str(file) for file in self._closure_of(workflow_type))

    def _import_reads_of(self, closure: set[Path], history: Path) -> Iterator[Path]:
        """The files read while the workflows were imported that belong to a workflow with this code
        closure: read with one of its modules on the stack (its own import, or an import it made), or,
        for data files, with no project module on the stack at all (nobody's in particular: everybody's)."""
        for file, project_callers in self._import_read_owners():
            if file == history:
                continue
            if project_callers & closure:
                yield file
            elif not project_callers and file.suffix != ".py":
                yield file
            # A module's source read with no project code on the stack is one replaytest imported for a
            # workflow spec: it belongs to the closures that contain it (included above), no others.

    def _import_read_owners(self) -> list[tuple[Path, frozenset[Path]]]:
        """Each relevant import-time read with the project files on its stack, worked out once a run."""
        if self._owners is None:
            self._owners = []
            assert self.import_reads is not None
            for name, callers in self.import_reads.files.items():
                file = relevant(name, (self.directory,))
                if file is not None:
                    owners = frozenset(caller for caller in map(self._caller_file, callers) if caller is not None)
                    self._owners.append((file, owners))
        return self._owners

    def _caller_file(self, code_file: str) -> Path | None:
        if code_file not in self._callers:
            # "<frozen importlib._bootstrap>", "<string>": import machinery and exec'd text, no file.
            file = None if code_file.startswith("<") else Path(code_file).resolve()
            self._callers[code_file] = file if file is not None and self.closure._in_project(file) else None
        return self._callers[code_file]

    def _objects_for(self, workflow_type: str) -> list[tuple[Any, str]]:
        pairs = list(zip_longest(self.workflows.objects, self.workflows.origins[: len(self.workflows.objects)], fillvalue=""))
        matching = [(obj, origin) for obj, origin in pairs if workflow_type in type_names(obj)]
        return matching or pairs

    def _prompts_for(self, workflow_type: str) -> dict[str, str]:
        return prompt_manifest(*(obj for obj, _ in self._objects_for(workflow_type)))

    def _modules_for(self, workflow_type: str) -> list[Path]:
        def module_of(obj: Any, origin: str) -> Path | None:
            own = _module_file(sys.modules.get(getattr(obj, "__module__", "") or ""))
            if own is not None and self.closure._in_project(own):
                return own
            # An object of a framework's own class (a LangGraph @entrypoint is a Pregel): the project code
            # is the module it was imported from.
            return _module_file(sys.modules.get(origin.partition(":")[0])) or own

        matching = [module_of(obj, origin) for obj, origin in self._objects_for(workflow_type)]
        return [path for path in matching if path is not None]

    def save(self) -> None:
        cachedir.claim(self.file.parent.parent)  # the cache folder, with the markers that keep it out of git
        self.file.parent.mkdir(exist_ok=True)
        temporary = self.file.with_suffix(f".{os.getpid()}.tmp")
        written = self.entries if self.shard is None else {key: self.entries[key] for key in self._own}
        temporary.write_text(json.dumps(written, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temporary, self.file)
