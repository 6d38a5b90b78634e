"""Incremental replay: a history that replayed green is remembered, and skipped while nothing it
depends on has changed.

An entry is keyed by the history file's digest (its bytes: events, recorded prompt versions, everything)
and the replay options; it records the workflow type and the digests of the workflow's *code closure* —
the module the workflow object was imported from and every project module it reaches through imports,
followed transitively (prompt constants, helpers and step code live there, so a changed prompt in code
changes the closure). The entry holds while each of those files still has its digest. A history that
diverged, warned, was stale or failed is never remembered: it replays every time.

When a history's workflow type matches none of the loaded objects by name, the closure is every
workflow object's modules: skipping less is the safe side.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import fields
from itertools import zip_longest
from pathlib import Path
from typing import Any

from replaytest import __version__
from replaytest.replay.adapter import LoadedHistory, ReplayOptions, WorkflowSet
from replaytest.replay.divergence import ReplayResult

CACHE_VERSION = 1
_TYPE_ATTRIBUTES = ("__replaytest_workflow__", "__temporal_workflow_definition")


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _file_digest(path: Path) -> str | None:
    try:
        return _digest(path.read_bytes())
    except OSError:
        return None


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
        if not name:
            return None
        module = sys.modules.get(name)
        if module is not None:
            return _module_file(module)
        relative = Path(*name.split("."))
        for base in (self.root, *(Path(p) for p in sys.path if p and Path(p).resolve().is_relative_to(self.root))):
            for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
                if candidate.is_file():
                    return candidate.resolve()
        return None


class ReplayCache:
    """Green replays of earlier runs, in ``directory`` (the configuration's cache folder)."""

    def __init__(self, directory: Path, root: Path, workflows: WorkflowSet, options: ReplayOptions) -> None:
        self.file = directory / "replay" / "passed.json"
        self.closure = CodeClosure(root)
        self.workflows = workflows
        # Every option that can change a verdict keys the entries (``details`` only changes how a report
        # reads): a history that passed under a laxer policy is replayed again under a stricter one.
        verdict_options = {f.name: getattr(options, f.name) for f in fields(options) if f.name != "details"}
        self.salt = f"{CACHE_VERSION};{__version__};{json.dumps(verdict_options, sort_keys=True)}"
        self.skipped = 0
        try:
            loaded = json.loads(self.file.read_text(encoding="utf-8"))
            self.entries: dict[str, Any] = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            self.entries = {}

    def _key(self, path: Path, loaded: LoadedHistory | None = None) -> str | None:
        if loaded is None:
            try:
                loaded = LoadedHistory.read(path)
            except OSError:
                return None
        return _digest(self.salt.encode() + b"\0" + loaded.data)

    def fresh(self, path: Path, loaded: LoadedHistory | None = None) -> bool:
        """True when ``path`` replayed green before and neither it nor its workflow's code changed.
        ``loaded`` is the file already read for its replay (then its bytes are hashed, not read again)."""
        key = self._key(path, loaded)
        entry = self.entries.get(key) if key is not None else None
        if not isinstance(entry, dict) or not isinstance(entry.get("closure"), dict):
            return False
        for name, digest in entry["closure"].items():
            if _file_digest(Path(name)) != digest:
                return False
        self.skipped += 1
        return True

    def remember(self, path: Path, result: ReplayResult, loaded: LoadedHistory | None = None) -> None:
        if result.status != "passed" or result.warnings:
            return
        key = self._key(path, loaded)
        if key is None:
            return
        files: set[Path] = set()
        for module_file in self._modules_for(result.workflow_type):
            files |= self.closure.files(module_file)
        if not files:
            return  # nothing to watch: never skip it
        closure = {str(file): _file_digest(file) for file in sorted(files)}
        self.entries[key] = {"history": str(path), "workflow_type": result.workflow_type, "closure": closure}

    def _modules_for(self, workflow_type: str) -> list[Path]:
        def module_of(obj: Any, origin: str) -> Path | None:
            own = _module_file(sys.modules.get(getattr(obj, "__module__", "") or ""))
            if own is not None and self.closure._in_project(own):
                return own
            # An object of a framework's own class (a LangGraph @entrypoint is a Pregel): the project code
            # is the module it was imported from.
            return _module_file(sys.modules.get(origin.partition(":")[0])) or own

        pairs = list(zip_longest(self.workflows.objects, self.workflows.origins[: len(self.workflows.objects)], fillvalue=""))
        matching = [module_of(obj, origin) for obj, origin in pairs if workflow_type in type_names(obj)]
        if not matching:
            matching = [module_of(obj, origin) for obj, origin in pairs]
        return [path for path in matching if path is not None]

    def save(self) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.file.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(self.entries, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temporary, self.file)
