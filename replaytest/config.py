"""Project configuration: found as ruff finds its own, validated once.

Discovery walks up from the linted path (or the current directory); in each folder the first of
``.replaytest.toml``, ``replaytest.toml`` (their keys at the top level) and a ``pyproject.toml`` with a
``[tool.replaytest]`` table is the configuration, and the nearest folder holding one wins. ``--config FILE``
takes either shape. Everything is validated here, once per process, so the rest of the program receives
typed values and a bad key fails early with the file and the key named (``ConfigError``). A lint run with
its cache takes the file's table from the record the last one kept (``CONFIG_RECORD``, by the file's bytes)
instead of parsing the TOML again.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from replaytest import cachedir
from replaytest.fileio import write_atomic

# The meaning of every path glob setting (git's wildmatch); re-exported here, where it was defined before.
from replaytest.path_patterns import ExcludeMatcher, exclude_matcher, is_excluded, pattern_problem  # noqa: F401
from replaytest.records import FrozenRecord, factory, field_names


def toml_parser() -> Any:
    """The TOML parser (``tomllib``; ``tomli`` before 3.11), imported when a file is parsed: the import
    (datetime, string, compiled patterns) cost every lint run about 3.5 ms, and a lint run whose configuration
    file is remembered (``load_config(remember=True)``) parses none."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    return tomllib


# The lint categories, the fixed vocabulary of docs/design.md ("Lint contract"): every diagnostic and every
# rule has exactly one. Defined in the lowest layer because every side names them: selectors here, rules
# and reporters in lint, the runtime guards in replay.
CATEGORIES: tuple[str, ...] = (
    "clock",
    "random",
    "uuid",
    "idempotency-key",
    "step-name",
    "model-call",
    "iteration-order",
    "environment",
    "network",
    "filesystem",
    "concurrency",
    "sleep",
    "global-state",
    "rerun-on-resume",
    "pause",
    "syntax",
    "suppression",
)

# What a prompt version that differs from the recorded one means: for [tool.replaytest.replay], the pytest
# ini options and flags, the command line and the replay engine alike.
PromptPolicy = Literal["fail", "warn", "ignore"]
PROMPT_POLICIES: tuple[PromptPolicy, ...] = get_args(PromptPolicy)

# What a runtime guard's hit on a value read (clock, random, uuid) in orchestration code means: a failure of
# its own (``nondeterministic-call``) or a warning. A stopped effect always fails. No "ignore": a hazard
# the report does not show is a silent pass.
HazardPolicy = Literal["fail", "warn"]
HAZARD_POLICIES: tuple[HazardPolicy, ...] = get_args(HazardPolicy)


# How large a history file and one blob it references may be before a replay refuses to read it (an
# ``error`` result naming the file, its size and the limit): a history imported from production or shared
# between machines must not be able to exhaust memory. Defaults far above a real history (a 500,000-event
# one is about 130 MB) and far below what exhausts a CI runner.
DEFAULT_MAX_HISTORY_BYTES = 512 * 1024 * 1024
DEFAULT_MAX_BLOB_BYTES = 64 * 1024 * 1024


DEFAULT_CACHE_DIR = ".replaytest_cache"
# A lint run's record of its configuration file's table (``load_config(remember=True)``), in the lint folder of
# the default cache folder.
CONFIG_RECORD = "config.txt"


def one_of(values: tuple[str, ...]) -> str:
    """``fail, warn or ignore``: a vocabulary in a sentence."""
    return f"{', '.join(values[:-1])} or {values[-1]}" if len(values) > 1 else "".join(values)


# The key of a ``ConfigError`` about a configuration file as a whole (unreadable, not TOML).
FILE_KEY = "(file)"


class ConfigError(Exception):
    """A configuration value is missing, misspelt or of the wrong type; the message names file, table and
    key: ``pyproject.toml: [tool.replaytest.rules.RT104] key-names: must be a list of strings``. ``table``
    is the TOML table (or ini section) holding the key; an empty ``key`` means the table itself."""

    def __init__(self, path: Path | None, key: str, problem: str, *, table: str = "tool.replaytest") -> None:
        self.path = path
        self.key = key
        self.table = table
        self.problem = problem
        where = f"{path}: " if path is not None else ""
        if key.startswith("--"):  # a command-line flag, not a configuration key
            super().__init__(f"{key}: {problem}")
        elif key == FILE_KEY:  # the file as a whole, whatever its shape: no table to name
            super().__init__(f"{where}{problem}")
        elif key and not table:  # a top-level key of replaytest.toml
            super().__init__(f"{where}{key}: {problem}")
        elif key:
            super().__init__(f"{where}[{table}] {key}: {problem}")
        else:
            super().__init__(f"{where}[{table or 'top level'}]: {problem}")

    def at_top_level(self) -> ConfigError:
        """The same error for a file whose keys are at the top level (``replaytest.toml``): named without
        the ``tool.replaytest`` prefix a pyproject.toml needs (``[rules.RT104] key-names``, ``selectt``)."""
        table = self.table.removeprefix("tool.replaytest").removeprefix(".")
        return ConfigError(self.path, self.key, self.problem, table=table)


class ReplaySettings(FrozenRecord):
    """``[tool.replaytest.replay]``: where histories live and which code replays them."""

    paths: tuple[str, ...] = ()
    workflows: tuple[str, ...] = ()
    # What a prompt version that differs from the recorded one means, per history status.
    prompts_running: PromptPolicy = "fail"
    prompts_completed: PromptPolicy = "warn"
    # What a prompt a running/parked run has not reached yet means if it changed since the run started.
    prompts_pending: PromptPolicy = "fail"
    strict_args: bool = False
    # Globs (relative to the project root) of history files and folders not replayed, as lint's exclude.
    exclude: tuple[str, ...] = ()
    # What a clock/random/uuid read the runtime guards caught in orchestration code means.
    hazards: HazardPolicy = "fail"
    # The largest history file and blob a replay reads (``max-history-bytes``, ``max-blob-bytes``).
    max_history_bytes: int = DEFAULT_MAX_HISTORY_BYTES
    max_blob_bytes: int = DEFAULT_MAX_BLOB_BYTES

    def __init__(
        self, paths: tuple[str, ...] = (), workflows: tuple[str, ...] = (), prompts_running: PromptPolicy = "fail",
        prompts_completed: PromptPolicy = "warn", prompts_pending: PromptPolicy = "fail", strict_args: bool = False,
        exclude: tuple[str, ...] = (), hazards: HazardPolicy = "fail",
        max_history_bytes: int = DEFAULT_MAX_HISTORY_BYTES, max_blob_bytes: int = DEFAULT_MAX_BLOB_BYTES,
    ) -> None:
        self.__dict__.update(paths=paths, workflows=workflows, prompts_running=prompts_running,
            prompts_completed=prompts_completed, prompts_pending=prompts_pending, strict_args=strict_args,
            exclude=exclude, hazards=hazards, max_history_bytes=max_history_bytes, max_blob_bytes=max_blob_bytes)


class RedactSettings(FrozenRecord):
    """``[tool.replaytest.redact]``: what ``replaytest redact`` and importers scrub from payloads."""

    key_names: tuple[str, ...] = ()
    json_paths: tuple[str, ...] = ()
    replacement: str = "[redacted]"

    def __init__(
        self, key_names: tuple[str, ...] = (), json_paths: tuple[str, ...] = (), replacement: str = "[redacted]",
    ) -> None:
        self.__dict__.update(key_names=key_names, json_paths=json_paths, replacement=replacement)


class RuleTable(FrozenRecord):
    """One ``[tool.replaytest.rules.<CODE>]`` table as written: option name -> TOML value. Only the linter
    knows which rules are installed and what options they declare, so it checks these (``lint.options``).
    ``legacy`` maps an option set through an older top-level key (``LEGACY_RULE_KEYS``) to that key, so a
    bad value is reported where the user wrote it."""

    values: Mapping[str, Any] = factory(dict)
    legacy: Mapping[str, str] = factory(dict)

    def __init__(self, values: Mapping[str, Any] | None = None, legacy: Mapping[str, str] | None = None) -> None:
        self.__dict__.update(values={} if values is None else values, legacy={} if legacy is None else legacy)


# Top-level keys from before per-rule options, each now the option of one rule: key -> (code, option).
LEGACY_RULE_KEYS: Mapping[str, tuple[str, str]] = {
    "idempotency-key-names": ("RT104", "key-names"),
    "model-calls": ("RT201", "calls"),
}


class Config(FrozenRecord):
    """The validated ``[tool.replaytest]`` table. ``path`` is the pyproject.toml it came from, if any."""

    path: Path | None = None
    root: Path = factory(Path.cwd)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = factory(dict)
    # Unset (None) means every installed profile is on; ``frameworks = []`` is refused (see config_from_table).
    frameworks: tuple[str, ...] = ()
    orchestration_decorators: tuple[str, ...] = ()
    step_decorators: tuple[str, ...] = ()
    # ``[tool.replaytest.rules.<CODE>]`` tables (and the legacy top-level keys mapped onto them), by code.
    rules: Mapping[str, RuleTable] = factory(dict)
    cache_dir: str = DEFAULT_CACHE_DIR
    # Apply ``exclude`` to files named on the command line too (pre-commit names every staged file).
    force_exclude: bool = False
    # Leave out of directory walks what the .gitignore files (and .git/info/exclude) ignore (path_patterns).
    respect_gitignore: bool = True
    # Source roots like ruff's ``src`` (relative to ``root``, globs allowed); empty means [".", "src"].
    src: tuple[str, ...] = ()
    # What ``fix`` may apply, as ruff's ``fixable``/``unfixable``: selectors (codes, prefixes, categories).
    fixable: tuple[str, ...] = ("ALL",)
    unfixable: tuple[str, ...] = ()
    replay: ReplaySettings = factory(ReplaySettings)
    redact: RedactSettings = factory(RedactSettings)
    # The keys the file set, as written (``replay.paths`` for a nested one): where ``--show-settings`` says
    # a value came from.
    set_keys: frozenset[str] = frozenset()

    def __init__(
        self, path: Path | None = None, root: Path | None = None, select: tuple[str, ...] = (),
        ignore: tuple[str, ...] = (), exclude: tuple[str, ...] = (),
        per_file_ignores: Mapping[str, tuple[str, ...]] | None = None, frameworks: tuple[str, ...] = (),
        orchestration_decorators: tuple[str, ...] = (), step_decorators: tuple[str, ...] = (),
        rules: Mapping[str, RuleTable] | None = None, cache_dir: str = DEFAULT_CACHE_DIR, force_exclude: bool = False,
        respect_gitignore: bool = True, src: tuple[str, ...] = (), fixable: tuple[str, ...] = ("ALL",),
        unfixable: tuple[str, ...] = (), replay: ReplaySettings | None = None, redact: RedactSettings | None = None,
        set_keys: frozenset[str] = frozenset(),
    ) -> None:
        self.__dict__.update(path=path, root=Path.cwd() if root is None else root, select=select, ignore=ignore,
            exclude=exclude, per_file_ignores={} if per_file_ignores is None else per_file_ignores,
            frameworks=frameworks, orchestration_decorators=orchestration_decorators, step_decorators=step_decorators,
            rules={} if rules is None else rules, cache_dir=cache_dir, force_exclude=force_exclude,
            respect_gitignore=respect_gitignore, src=src, fixable=fixable, unfixable=unfixable,
            replay=ReplaySettings() if replay is None else replay,
            redact=RedactSettings() if redact is None else redact, set_keys=set_keys)

    def table_name(self, sub: str = "") -> str:
        """How messages name a table of this configuration: ``tool.replaytest.replay`` in a pyproject.toml,
        ``replay`` in a replaytest.toml (its keys are at the top level, which is ``""``)."""
        if self.path is not None and keys_at_top_level(self.path):
            return sub
        return f"tool.replaytest.{sub}" if sub else "tool.replaytest"

    def cache_folder(self, *, claim: bool = False) -> Path:
        """The cache folder (``cache-dir`` under ``root``), checked to be one replaytest may use (see
        ``replaytest.cachedir``) and, with ``claim``, created with its markers. A folder holding files that
        are not replaytest's is a ``ConfigError`` naming ``cache-dir``."""
        folder = self.root / self.cache_dir
        try:
            cachedir.claim(folder) if claim else cachedir.check(folder)
        except cachedir.CacheDirError as error:
            raise ConfigError(self.path, "cache-dir", f"{self.cache_dir!r} ({folder}) {error.problem}",
                              table=self.table_name()) from None
        return folder

    def fingerprint(self) -> str:
        """A stable text of every value that can change a lint result, for cache keys."""
        parts = []
        for name in field_names(self):
            # Rule options count through the values the rules receive (defaults filled in, an old key and
            # its new spelling alike): the lint context adds those to its fingerprint.
            # ``fixable``/``unfixable`` decide what ``fix`` applies, not what lint finds.
            if name in ("path", "root", "replay", "redact", "cache_dir", "force_exclude", "respect_gitignore",
                        "rules", "fixable", "unfixable", "set_keys"):
                continue
            value = getattr(self, name)
            if isinstance(value, Mapping):
                value = sorted((k, tuple(v)) for k, v in value.items())
            parts.append(f"{name}={value!r}")
        return ";".join(parts)


# Files holding replaytest's keys at the top level, looked for in each folder before its pyproject.toml, in
# this order (ruff's ``.ruff.toml``, ``ruff.toml``, ``pyproject.toml``).
CONFIG_FILE_NAMES = (".replaytest.toml", "replaytest.toml")


def find_config_file(start: Path) -> Path | None:
    """The configuration file that applies at ``start``: walking up, the first folder with
    ``.replaytest.toml``, ``replaytest.toml`` or a ``pyproject.toml`` holding ``[tool.replaytest]`` gives it
    (in that order); without any, the nearest ``pyproject.toml`` at all (so ``root`` still means the
    project), else None."""
    start = start.resolve()
    if start.is_file():
        start = start.parent
    nearest: Path | None = None
    for directory in (start, *start.parents):
        for name in CONFIG_FILE_NAMES:
            if (directory / name).is_file():
                return directory / name
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            if nearest is None:
                nearest = candidate
            try:
                if b"[tool.replaytest" in candidate.read_bytes():
                    return candidate
            except OSError:
                continue
    return nearest


def keys_at_top_level(path: Path) -> bool:
    """Whether ``path`` holds replaytest's keys at the top level (``replaytest.toml``), not in a pyproject.toml
    table: decided by the name for discovered files; see ``_table_of`` for ``--config``."""
    return path.name in CONFIG_FILE_NAMES


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has a ``[tool.replaytest]`` table,
    else the nearest one at all, else None. Deprecated: it does not see ``replaytest.toml``; discovery is
    ``find_config_file``. Kept for a release for code that imported it."""
    import warnings

    warnings.warn("replaytest.config.find_pyproject is deprecated: use find_config_file, which also finds "
                  "replaytest.toml and .replaytest.toml", DeprecationWarning, stacklevel=2)
    start = start.resolve()
    if start.is_file():
        start = start.parent
    nearest: Path | None = None
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            if nearest is None:
                nearest = candidate
            try:
                if b"[tool.replaytest" in candidate.read_bytes():
                    return candidate
            except OSError:
                continue
    return nearest


VCS_MARKERS = (".git", ".hg", ".svn")


def project_root_without_pyproject(start: Path) -> Path:
    """Where a project without any ``pyproject.toml`` has its root (module names, ``exclude`` globs and the
    lint cache are relative to it): the top of the version-control checkout holding ``start`` (a folder
    with ``.git``, ``.hg`` or ``.svn``), else the current directory, as ruff does without a configuration
    file -- never the linted folder itself, so ``app`` keeps its name and no cache lands inside it."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in VCS_MARKERS):
            return directory
    return Path.cwd().resolve()


def load_config(
    start: Path | None = None, explicit: Path | None = None, *, isolated: bool = False, remember: bool = False,
) -> Config:
    """Read and validate configuration; ``explicit`` (``--config``) wins over discovery from ``start``.
    ``isolated`` (``--isolated``) reads no file: every setting its default, the project root where the
    configuration file would have put it. ``remember`` (a lint run using its cache) takes replaytest's table of
    the file from the record the last run kept of it (``CONFIG_RECORD``) when the file's bytes are the same,
    instead of parsing the TOML again, and keeps such a record; the table is validated as a parsed one is."""
    path = explicit if explicit is not None else find_config_file(start or Path.cwd())
    if isolated:
        root = path.parent.resolve() if path is not None else project_root_without_pyproject(start or Path.cwd())
        return Config(root=root)
    if path is None:
        return Config(root=project_root_without_pyproject(start or Path.cwd()))
    if not remember:
        table, top_level = _table_of(read_toml(path), path, explicit=explicit is not None)
        return _validated(table, path, top_level)
    data = _read_bytes(path)
    record = _ConfigRecord(path, data, explicit=explicit is not None)
    remembered = record.recall()
    if remembered is not None:
        return _validated(remembered[0], path, remembered[1])
    table, top_level = _table_of(_parse_toml(path, data), path, explicit=explicit is not None)
    config = _validated(table, path, top_level)
    if config.cache_dir == DEFAULT_CACHE_DIR:  # the record lives in the default cache folder, the one it names
        record.keep(table, top_level)
    return config


def _validated(table: Any, path: Path, top_level: bool) -> Config:
    try:
        return config_from_table(table, path)
    except ConfigError as error:
        raise (error.at_top_level() if top_level else error) from None


class _ConfigRecord:
    """``CONFIG_RECORD`` in the lint folder of the default cache folder beside a configuration file: one line,
    the sha256 of (the record's format, the file's absolute path, whether it was named by ``--config``, its
    bytes), whether its keys are at the top level, and replaytest's table of it as JSON. Kept only for a file
    whose table leaves ``cache-dir`` at its default (the folder the record is in) and holds only what JSON
    gives back unchanged (no TOML dates or times); trusted as the lint cache is (``--no-cache`` reads neither)."""

    def __init__(self, path: Path, data: bytes, *, explicit: bool) -> None:
        import hashlib

        self.folder = path.parent.resolve() / DEFAULT_CACHE_DIR
        digest = hashlib.sha256(f"replaytest-config 1\0{path.resolve()}\0{int(explicit)}\0".encode(
            "utf-8", "surrogateescape"))
        digest.update(data)
        self.key = digest.hexdigest()

    def recall(self) -> tuple[Any, bool] | None:
        """(table, top_level) recorded for exactly these bytes, or None."""
        import json

        try:
            cachedir.check(self.folder)  # a folder replaytest may not take is not read
            with open(self.folder / "lint" / CONFIG_RECORD, "rb") as handle:
                key, top_level, text = handle.read().split(b" ", 2)
            if key.decode("ascii") != self.key or top_level not in (b"0", b"1"):
                return None
            table = json.loads(text)
        except (OSError, ValueError, cachedir.CacheDirError):  # none, damaged or another file's: parse
            return None
        if not isinstance(table, dict) or table.get("cache-dir", DEFAULT_CACHE_DIR) != DEFAULT_CACHE_DIR:
            return None
        return table, top_level == b"1"

    def keep(self, table: Any, top_level: bool) -> None:
        import json

        try:
            text = json.dumps(table, separators=(",", ":"), ensure_ascii=True)
            if json.loads(text) != table:  # a value JSON does not give back as it was
                return
        except (TypeError, ValueError, RecursionError):  # TOML dates and times are not JSON
            return
        try:
            cachedir.claim(self.folder)
            (self.folder / "lint").mkdir(exist_ok=True)
            write_atomic(str(self.folder / "lint" / CONFIG_RECORD), f"{self.key} {int(top_level)} {text}".encode("ascii"))
        except (OSError, cachedir.CacheDirError):
            return  # a read-only checkout reads its configuration each run


def _table_of(document: dict[str, Any], path: Path, *, explicit: bool) -> tuple[Any, bool]:
    """(replaytest's table of a parsed file, whether its keys are at the top level). A discovered file's
    shape follows its name. A ``--config`` file may have either shape: a ``[tool.replaytest]`` table makes
    it a pyproject.toml, otherwise its top-level keys are the settings -- except in a file named
    ``pyproject.toml``, where no table means it holds no replaytest settings, which for a file named on
    purpose is an error rather than a run with every default."""
    if keys_at_top_level(path):
        return document, True
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(path, "(table)", "[tool] must be a table")
    if "replaytest" in tool or not explicit:
        return tool.get("replaytest", {}), False
    if path.name == "pyproject.toml":
        raise ConfigError(path, "", "is missing: --config names a pyproject.toml without replaytest settings")
    return document, True


def read_toml(path: Path) -> dict[str, Any]:
    """A configuration file parsed, or a ``ConfigError`` naming the file and why it cannot be read."""
    return _parse_toml(path, _read_bytes(path))


def _read_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise ConfigError(path, FILE_KEY, f"cannot be read: {error.strerror or error}") from None


def _parse_toml(path: Path, data: bytes) -> dict[str, Any]:
    """``data`` (the bytes of ``path``) parsed as ``tomllib.load`` parses a file, errors as ``ConfigError``."""
    tomllib = toml_parser()
    try:
        document: dict[str, Any] = tomllib.loads(data.decode())
    except UnicodeDecodeError as error:  # tomllib reports bytes that are not UTF-8 this way
        raise ConfigError(path, FILE_KEY, f"is not UTF-8 (byte {error.start}): {error.reason}") from None
    except RecursionError:
        raise ConfigError(path, FILE_KEY, "is nested too deeply to read") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(path, FILE_KEY, f"is not valid TOML: {error}") from None
    return document


_LIST_KEYS = {
    "select": "select",
    "ignore": "ignore",
    "exclude": "exclude",
    "frameworks": "frameworks",
    "orchestration-decorators": "orchestration_decorators",
    "step-decorators": "step_decorators",
    "src": "src",
    "fixable": "fixable",
    "unfixable": "unfixable",
}

# ruff's ``extend-*`` keys: each adds to the key it names (after it), so a shared base configuration's
# list is kept and extended rather than replaced. ``extend-select`` on top of the default selection
# (every rule) changes nothing but is accepted, as in ruff.
_EXTEND_KEYS = {
    "extend-select": "select",
    "extend-ignore": "ignore",
    "extend-exclude": "exclude",
    "extend-per-file-ignores": "per-file-ignores",
}

# Selector lists checked to name codes or categories (the key as written -> the Config field it feeds).
_SELECTOR_KEYS = ("select", "ignore", "extend-select", "extend-ignore", "fixable", "unfixable")

_BOOL_KEYS = {"force-exclude": "force_exclude", "respect-gitignore": "respect_gitignore"}


def config_from_table(table: Mapping[str, Any], path: Path | None = None) -> Config:
    """Validate a ``[tool.replaytest]`` table (already parsed) into a Config."""
    if not isinstance(table, Mapping):
        raise ConfigError(path, "(table)", "must be a table")
    values: dict[str, Any] = {"path": path, "root": path.parent.resolve() if path else Path.cwd().resolve()}
    values["set_keys"] = frozenset(
        f"{key}.{inner}" if isinstance(value, Mapping) and key in ("replay", "redact") else key
        for key, value in table.items() for inner in (value if isinstance(value, Mapping) and key in ("replay", "redact")
                                                      else (None,))
    )
    known = CONFIG_KEYS
    extensions: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(path, key, f"unknown key{_nearest_hint(key, known)}; expected one of "
                                         f"{', '.join(sorted(known))}")
        if key in _LIST_KEYS:
            values[_LIST_KEYS[key]] = _string_list(path, key, value)
            if key == "exclude":
                check_patterns(path, key, values["exclude"])
        elif key in ("per-file-ignores", "extend-per-file-ignores"):
            if not isinstance(value, Mapping):
                raise ConfigError(path, key, "must be a table of glob = [codes or categories]")
            tables = {str(glob): _string_list(path, f"{key}.{glob}", codes) for glob, codes in value.items()}
            check_patterns(path, key, [glob.removeprefix("!") for glob in tables])
            if key == "per-file-ignores":
                values["per_file_ignores"] = tables
            else:
                extensions[key] = tables
        elif key in _EXTEND_KEYS:
            extensions[key] = _string_list(path, key, value)
            if key == "extend-exclude":
                check_patterns(path, key, extensions[key])
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(path, key, "must be true or false")
            values[_BOOL_KEYS[key]] = value
        elif key == "cache-dir":
            if not isinstance(value, str) or not value:
                raise ConfigError(path, key, "must be a non-empty string")
            problem = cachedir.containment_problem(values["root"] / value, values["root"])
            if problem:
                raise ConfigError(path, key, f"{value!r} {problem}")
            values["cache_dir"] = value
        elif key == "replay":
            values["replay"] = _replay_settings(path, value)
        elif key == "redact":
            values["redact"] = _redact_settings(path, value)
        elif key == "rules":
            values["rules"] = _rule_tables(path, value)
    values["rules"] = _with_legacy_keys(path, table, values.get("rules", {}))
    if "frameworks" in values and not values["frameworks"]:
        # An empty list read as "every framework" is the opposite of what it says, and "none" would lint
        # nothing while passing: neither is a silent meaning worth having.
        raise ConfigError(path, "frameworks", "is an empty list, which would turn every framework profile off and "
                                              "check nothing; remove the key to use every installed framework, or "
                                              "name the ones you use, e.g. [\"temporal\"]")
    for key in _SELECTOR_KEYS:
        entries = values.get(_LIST_KEYS[key], ()) if key in _LIST_KEYS else extensions.get(key, ())
        for entry in entries:
            if not is_selector(entry):
                raise ConfigError(path, key, f"{entry!r} is neither a rule code (RT101, RT1) nor a category")
    for key in ("per-file-ignores", "extend-per-file-ignores"):
        per_file = values.get("per_file_ignores", {}) if key == "per-file-ignores" else extensions.get(key, {})
        for glob, entries in per_file.items():
            for entry in entries:
                if not is_selector(entry):
                    raise ConfigError(path, f"{key}.{glob}", f"{entry!r} is neither a rule code nor a category")
    if "extend-select" in extensions:
        # As in ruff: added to ``select``, or to the default selection (every rule) when it is not set.
        values["select"] = (*(values.get("select", ()) or ("ALL",)), *extensions["extend-select"])
    if "extend-ignore" in extensions:
        values["ignore"] = (*values.get("ignore", ()), *extensions["extend-ignore"])
    if "extend-exclude" in extensions:
        values["exclude"] = (*values.get("exclude", ()), *extensions["extend-exclude"])
    if "extend-per-file-ignores" in extensions:
        merged = {glob: tuple(codes) for glob, codes in values.get("per_file_ignores", {}).items()}
        for glob, codes in extensions["extend-per-file-ignores"].items():
            merged[glob] = (*merged.get(glob, ()), *codes)
        values["per_file_ignores"] = merged
    for key in ("orchestration_decorators", "step_decorators"):
        for entry in values.get(key, ()):
            if not all(part.isidentifier() for part in entry.split(".")):
                raise ConfigError(path, key.replace("_", "-"), f"{entry!r} is not a dotted qualified name")
    return Config(**values)


# Every key of ``[tool.replaytest]``: the one list the README's configuration table is checked against.
CONFIG_KEYS: frozenset[str] = frozenset({
    *_LIST_KEYS, *_EXTEND_KEYS, "per-file-ignores", "cache-dir", "replay", "redact", "rules", *_BOOL_KEYS,
    *LEGACY_RULE_KEYS,
})


def _nearest_hint(key: str, known: frozenset[str]) -> str:
    """``; did you mean extend-select?`` for a misspelt key, or nothing."""
    import difflib  # only for a misspelt key

    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close else ""


def is_selector(entry: str) -> bool:
    """A valid ``select``/``ignore`` entry: a category, ``ALL``, or a rule code or code prefix (``RT101``, ``RT1``)."""
    if entry in CATEGORIES or entry == "ALL":
        return True
    # Rule codes of third-party rules may use another prefix; any LETTERS+DIGITS prefix is a selector.
    letters = entry.rstrip("0123456789")
    return bool(letters) and letters.isalpha() and letters.isupper()


def check_patterns(path: Path | None, key: str, patterns: Iterable[str], *, table: str = "tool.replaytest") -> None:
    """A glob setting's entries must each be able to match something (git's wildmatch, ``path_patterns``):
    a refused pattern, or one gitignore syntax reads as a comment, would otherwise exclude nothing unsaid."""
    for pattern in patterns:
        problem = pattern_problem(pattern)
        if problem is not None:
            raise ConfigError(path, key, f"{pattern!r}: {problem}", table=table)


def _string_list(path: Path | None, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        raise ConfigError(path, key, f"must be a list of strings, e.g. [{value!r}]")
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(path, key, "must be a list of strings")
    return tuple(value)


def _rule_tables(path: Path | None, table: Any) -> dict[str, RuleTable]:
    """``[tool.replaytest.rules]``: one table of options per rule code; the values are the linter's to check."""
    if not isinstance(table, Mapping):
        raise ConfigError(path, "rules", "must be a table of rule tables, e.g. [tool.replaytest.rules.RT104]")
    tables: dict[str, RuleTable] = {}
    for code, options in table.items():
        if not isinstance(options, Mapping):
            raise ConfigError(path, code, f"must be a table of options, [tool.replaytest.rules.{code}]",
                              table="tool.replaytest.rules")
        tables[code] = RuleTable(values=dict(options))
    return tables


def _with_legacy_keys(path: Path | None, table: Mapping[str, Any], tables: dict[str, RuleTable]) -> dict[str, RuleTable]:
    """Map the older top-level keys onto the rule options they became. Both spellings at once is an error:
    which one should win is a guess, and a list silently merged or dropped is what strict settings avoid."""
    for key, (code, option) in LEGACY_RULE_KEYS.items():
        if key not in table:
            continue
        current = tables.get(code, RuleTable())
        if option in current.values:
            raise ConfigError(path, key, f"is the older spelling of [tool.replaytest.rules.{code}] {option}, which is "
                                         f"set too; keep only {option} (move these names into it)")
        tables[code] = RuleTable(values={**current.values, option: table[key]},
                                 legacy={**current.legacy, option: key})
    return tables


_REPLAY_KEYS = frozenset({"paths", "workflows", "prompts-running", "prompts-completed", "prompts-pending", "strict-args",
                          "hazards", "exclude", "max-history-bytes", "max-blob-bytes"})
_REDACT_KEYS = frozenset({"key-names", "json-paths", "replacement"})


def _replay_settings(path: Path | None, table: Any) -> ReplaySettings:
    if not isinstance(table, Mapping):
        raise ConfigError(path, "replay", "must be a table")
    values: dict[str, Any] = {}
    for key, value in table.items():
        full = f"replay.{key}"
        if key in ("paths", "workflows", "exclude"):
            values[key] = _string_list(path, full, value)
            if key == "exclude":
                check_patterns(path, full, values[key])
        elif key in ("prompts-running", "prompts-completed", "prompts-pending"):
            if value not in PROMPT_POLICIES:
                raise ConfigError(path, full, f"must be one of {', '.join(PROMPT_POLICIES)}")
            values[key.replace("-", "_")] = value
        elif key == "strict-args":
            if not isinstance(value, bool):
                raise ConfigError(path, full, "must be true or false")
            values["strict_args"] = value
        elif key == "hazards":
            if value not in HAZARD_POLICIES:
                raise ConfigError(path, full, f"must be one of {', '.join(HAZARD_POLICIES)}")
            values["hazards"] = value
        elif key in ("max-history-bytes", "max-blob-bytes"):
            values[key.replace("-", "_")] = byte_limit(value, lambda problem: ConfigError(path, full, problem))
        else:
            raise ConfigError(
                path, full, f"unknown key{_nearest_hint(key, _REPLAY_KEYS)}; expected one of paths, workflows, "
                "prompts-running, prompts-completed, prompts-pending, strict-args, hazards, exclude, "
                "max-history-bytes, max-blob-bytes"
            )
    for key in values.get("workflows", ()):
        # A module name alone names the whole module (Temporal and Restate replay every workflow or service in it).
        if ":" not in key and not all(part.isidentifier() for part in key.split(".")):
            raise ConfigError(path, "replay.workflows", f"{key!r} must be module:attribute or a module name")
    return ReplaySettings(**values)


def byte_limit(value: Any, error: Callable[[str], Exception]) -> int:
    """A size limit as configured: a positive integer of bytes (TOML integer, or ini text of digits with
    optional ``_``/``,`` separators); ``error(problem)`` is raised for anything else."""
    if isinstance(value, str):
        digits = value.strip().replace("_", "").replace(",", "")
        if digits.isdigit():
            value = int(digits)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise error(f"must be a positive whole number of bytes (e.g. 536870912 for 512 MiB), not {value!r}")
    return value


def _redact_settings(path: Path | None, table: Any) -> RedactSettings:
    if not isinstance(table, Mapping):
        raise ConfigError(path, "redact", "must be a table")
    values: dict[str, Any] = {}
    for key, value in table.items():
        full = f"redact.{key}"
        if key in ("key-names", "json-paths"):
            values[key.replace("-", "_")] = _string_list(path, full, value)
        elif key == "replacement":
            if not isinstance(value, str):
                raise ConfigError(path, full, "must be a string")
            values["replacement"] = value
        else:
            raise ConfigError(path, full, f"unknown key{_nearest_hint(key, _REDACT_KEYS)}; expected one of "
                                          "key-names, json-paths, replacement")
    return RedactSettings(**values)


class DeclaredPython(FrozenRecord):
    """The oldest Python a project says it runs on, and where it says so (for messages)."""

    oldest: tuple[int, int]
    source: str  # "requires-python '>=3.10'" or "[tool.ruff] target-version 'py310'"

    def __init__(self, oldest: tuple[int, int], source: str) -> None:
        self.__dict__.update(oldest=oldest, source=source)


# Compiled on first use (``re`` keeps them): only a file that needs a newer grammar asks.
_VERSION = r"(?:>=|~=|==|>)\s*(\d+)\.(\d+)"
_RUFF_TARGET = r"py(\d)(\d+)"


def declared_python(root: Path) -> DeclaredPython | None:
    """What ``<root>/pyproject.toml`` declares as the oldest Python the project accepts: ``[project]
    requires-python`` (its lower bound), else ruff's ``target-version`` (which ruff takes as that oldest
    version too). None when it declares neither or cannot be read (read only when a file needed a newer
    grammar than the running Python's, so a broken file here is that check's to skip, never the run's)."""
    tomllib = toml_parser()
    try:
        with open(root / "pyproject.toml", "rb") as handle:
            document = tomllib.load(handle)
    except (OSError, UnicodeDecodeError, RecursionError, tomllib.TOMLDecodeError):
        return None
    project = document.get("project")
    requires = project.get("requires-python") if isinstance(project, dict) else None
    if isinstance(requires, str):
        bounds = [(int(major), int(minor)) for major, minor in re.findall(_VERSION, requires)]
        if bounds:
            return DeclaredPython(max(bounds), f"requires-python {requires.strip()!r}")
    tool = document.get("tool")
    ruff = tool.get("ruff") if isinstance(tool, dict) else None
    target = ruff.get("target-version") if isinstance(ruff, dict) else None
    if isinstance(target, str) and (match := re.fullmatch(_RUFF_TARGET, target.strip())):
        return DeclaredPython((int(match[1]), int(match[2])), f"[tool.ruff] target-version {target.strip()!r}")
    return None
