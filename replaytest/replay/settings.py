"""The replay settings of a project as ``replaytest replay``/``check`` see them: one configuration for the
command line and pytest.

The pytest plugin reads ini options (``replay_paths``, ``replay_workflows``, ``replay_prompts``,
``replay_strict_args``, ``replay_stale``, ``replay_hazards``) with ``[tool.replaytest.replay]`` as the fallback. The command
line reads the same ini options from the same file pytest would use, with the same precedence, so a
project configured for pytest replays the same histories against the same code from ``replaytest check``:

* the ini file is found as pytest finds it: walking up from the start folder, the first of
  ``pytest.ini``, ``.pytest.ini``, ``pyproject.toml`` with ``[tool.pytest.ini_options]``, ``tox.ini``
  with ``[pytest]``, ``setup.cfg`` with ``[tool:pytest]``;
* ``replay_paths`` (relative to the ini file's folder) wins over ``[tool.replaytest.replay] paths``
  (relative to the project root); without either, ``fixtures/histories`` when current code is configured;
* ``replay_workflows`` (imported from the ini file's folder) wins over ``workflows``;
* ``replay_prompts`` sets both prompt policies, ``replay_prompts_pending`` the pending-prompt one; ``replay_strict_args`` or ``strict-args`` turns on strict
  arguments; ``replay_stale`` (``fail`` or ``skip``) decides what a stale history means; ``replay_hazards``
  wins over ``hazards`` (``fail`` or ``warn``: what a clock/random/uuid read the runtime guards caught means);
* ``replay_exclude`` (globs relative to the ini file's folder) wins over ``[tool.replaytest.replay]
  exclude`` (relative to the project root); see ``replay.exclusion``;
* ``replay_max_history_bytes`` and ``replay_max_blob_bytes`` win over ``max-history-bytes`` and
  ``max-blob-bytes`` (the largest history file and blob a replay reads).

Command-line arguments (``--workflows``, paths) win over both. pytest's ``-c``/``-o`` and
``PYTEST_ADDOPTS`` are not seen here.
"""

from __future__ import annotations

import configparser
import difflib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replaytest.config import (
    DEFAULT_MAX_BLOB_BYTES,
    DEFAULT_MAX_HISTORY_BYTES,
    HAZARD_POLICIES,
    PROMPT_POLICIES,
    Config,
    ConfigError,
    HazardPolicy,
    PromptPolicy,
    byte_limit,
)
from replaytest.replay.exclusion import ExcludeSetting

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_HISTORY_DIR = "fixtures/histories"

# Every ini option of the pytest plugin (it registers exactly these; a test holds the two together).
PYTEST_INI_KEYS: tuple[str, ...] = (
    "replay_paths", "replay_workflows", "replay_prompts", "replay_prompts_pending", "replay_strict_args",
    "replay_hazards", "replay_max_history_bytes", "replay_max_blob_bytes", "replay_details", "replay_stale",
    "replay_coverage", "replay_exclude",
)


def nearest_ini_key(key: str) -> str | None:
    """The plugin's ini option ``key`` is a misspelling of (``replay_path`` -> ``replay_paths``), or None
    for a key that is one of them or not close to any (another plugin's option)."""
    if key in PYTEST_INI_KEYS:
        return None
    close = difflib.get_close_matches(key.lower(), PYTEST_INI_KEYS, n=1, cutoff=0.8)
    return close[0] if close else None


def misspelt_ini_key_problem(key: str, nearest: str) -> str:
    return (f"is not an ini option of replaytest; did you mean {nearest}? (its options: "
            f"{', '.join(PYTEST_INI_KEYS)})")


_TRUE = {"y", "yes", "t", "true", "on", "1"}
_FALSE = {"n", "no", "f", "false", "off", "0"}


@dataclass(frozen=True)
class PytestIni:
    """The replay options of the ini file pytest would read (None when no such file or option)."""

    path: Path | None = None
    table: str = ""  # how the file names its pytest section, for messages
    paths: tuple[str, ...] | None = None
    workflows: tuple[str, ...] | None = None
    prompts: PromptPolicy | None = None
    strict_args: bool | None = None
    stale: str | None = None
    prompts_pending: PromptPolicy | None = None
    exclude: tuple[str, ...] | None = None
    hazards: HazardPolicy | None = None
    max_history_bytes: int | None = None
    max_blob_bytes: int | None = None

    @property
    def folder(self) -> Path | None:
        return self.path.parent if self.path is not None else None


@dataclass(frozen=True)
class ReplayPlan:
    """What to replay, against which code, with which options, and where each came from."""

    paths: tuple[Path, ...]
    workflows: tuple[str, ...]
    workflows_base: Path
    prompts_running: PromptPolicy
    prompts_completed: PromptPolicy
    strict_args: bool
    stale: str
    prompts_pending: PromptPolicy
    paths_from: str  # e.g. "[tool.pytest.ini_options] replay_paths in /p/pyproject.toml"
    workflows_from: str
    exclude: tuple[ExcludeSetting, ...] = ()  # the one exclude setting in force (none when unset)
    hazards: HazardPolicy = "fail"
    max_history_bytes: int = DEFAULT_MAX_HISTORY_BYTES
    max_blob_bytes: int = DEFAULT_MAX_BLOB_BYTES
    # RT201's ``calls`` (``[tool.replaytest.rules.RT201]`` or the older top-level ``model-calls``).
    model_calls: tuple[str, ...] = ()

    @property
    def configured(self) -> bool:
        return bool(self.paths)


def find_pytest_ini(start: Path) -> PytestIni:
    """The ini file pytest would use from ``start`` (see the module docstring) and its replay options."""
    start = start.resolve()
    for directory in (start, *start.parents):
        for name, reader in _INI_FILES:
            candidate = directory / name
            if not candidate.is_file():
                continue
            found = reader(candidate)
            if found is not None:
                return found
    return PytestIni()


def ini_table(path: Path) -> str:
    """How the pytest ini file ``path`` names its pytest section, for messages (``[pytest]`` for
    pytest.ini, .pytest.ini and tox.ini)."""
    return {"pyproject.toml": "[tool.pytest.ini_options]", "setup.cfg": "[tool:pytest]"}.get(path.name, "[pytest]")


def _from_pyproject(path: Path) -> PytestIni | None:
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return None  # not pytest's file then; the replaytest table's reader reports a broken pyproject.toml
    table = document.get("tool", {}).get("pytest", {}).get("ini_options")
    if not isinstance(table, dict):
        return None
    return _options(path, "[tool.pytest.ini_options]", table)


def _ini_reader(section: str, always: bool) -> Any:
    def read(path: Path) -> PytestIni | None:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error, UnicodeDecodeError) as error:
            raise ConfigError(path, "", f"cannot be read: {error}", table=section) from None
        if not parser.has_section(section):
            return PytestIni(path, f"[{section}]") if always else None
        return _options(path, f"[{section}]", dict(parser.items(section)))

    return read


_INI_FILES = (
    ("pytest.ini", _ini_reader("pytest", always=True)),
    (".pytest.ini", _ini_reader("pytest", always=True)),
    ("pyproject.toml", _from_pyproject),
    ("tox.ini", _ini_reader("pytest", always=False)),
    ("setup.cfg", _ini_reader("tool:pytest", always=False)),
)
# The files pytest may take its ini options from, in the order it looks: whatever copies a project for a
# replay (impact's verification copy) must copy each of them.
PYTEST_INI_NAMES: tuple[str, ...] = tuple(name for name, _ in _INI_FILES)


def _options(path: Path, table: str, values: dict[str, Any]) -> PytestIni:
    for key in values:
        # A misspelt option would leave its setting at the fallback while ``check`` skips cached
        # histories as green under it: refused here, before anything is replayed or read from the cache.
        nearest = nearest_ini_key(key)
        if nearest is not None:
            raise ConfigError(path, key, misspelt_ini_key_problem(key, nearest), table=table.strip("[]"))

    def lines(key: str) -> tuple[str, ...] | None:
        value = values.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            items = [line.strip() for line in value.split("\n")]
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            items = [item.strip() for item in value]
        else:
            raise ConfigError(path, key, "must be a list of strings", table=table.strip("[]"))
        return tuple(item for item in items if item) or None

    def choice(key: str, allowed: tuple[str, ...]) -> str | None:
        value = values.get(key)
        if value is None or value == "":
            return None
        if value not in allowed:
            raise ConfigError(path, key, f"must be one of {', '.join(allowed)}, not {value!r}", table=table.strip("[]"))
        return str(value)

    def policy(key: str) -> PromptPolicy | None:
        value = choice(key, PROMPT_POLICIES)
        return next((known for known in PROMPT_POLICIES if known == value), None)

    def hazard_policy(key: str) -> HazardPolicy | None:
        value = choice(key, HAZARD_POLICIES)
        return next((known for known in HAZARD_POLICIES if known == value), None)

    def size(key: str) -> int | None:
        value = values.get(key)
        if value is None or value == "":
            return None
        return byte_limit(value, lambda problem: ConfigError(path, key, problem, table=table.strip("[]")))

    strict: bool | None = None
    raw = values.get("replay_strict_args")
    if isinstance(raw, bool):
        strict = raw
    elif isinstance(raw, str) and raw.strip().lower() in _TRUE | _FALSE:
        strict = raw.strip().lower() in _TRUE
    elif raw is not None:
        raise ConfigError(path, "replay_strict_args", "must be true or false", table=table.strip("[]"))
    return PytestIni(path, table, lines("replay_paths"), lines("replay_workflows"),
                     policy("replay_prompts"), strict, choice("replay_stale", ("fail", "skip")),
                     policy("replay_prompts_pending"), exclude=lines("replay_exclude"),
                     hazards=hazard_policy("replay_hazards"),
                     max_history_bytes=size("replay_max_history_bytes"), max_blob_bytes=size("replay_max_blob_bytes"))


def replay_plan(config: Config, start: Path) -> ReplayPlan:
    """The project's replay settings from the pytest ini file and ``[tool.replaytest.replay]`` together."""
    ini = find_pytest_ini(start)
    table = config.replay
    where_table = f"[{config.table_name('replay')}] %s in {config.path}" if config.path else "[tool.replaytest.replay] %s"
    ini_folder = ini.folder or config.root
    if ini.workflows:
        workflows, workflows_base = ini.workflows, ini_folder
        workflows_from = f"{ini.table} replay_workflows in {ini.path}"
    else:
        workflows, workflows_base = table.workflows, config.root
        workflows_from = where_table % "workflows" if table.workflows else ""
    if ini.paths:
        paths = tuple(ini_folder / p for p in ini.paths)
        paths_from = f"{ini.table} replay_paths in {ini.path}"
    elif table.paths:
        paths = tuple(config.root / p for p in table.paths)
        paths_from = where_table % "paths"
    elif workflows and (ini_folder / DEFAULT_HISTORY_DIR).is_dir():
        paths = (ini_folder / DEFAULT_HISTORY_DIR,)
        paths_from = f"the default {DEFAULT_HISTORY_DIR} (current code is configured)"
    else:
        paths, paths_from = (), ""
    return ReplayPlan(
        paths=paths,
        workflows=workflows,
        workflows_base=workflows_base,
        prompts_running=ini.prompts or table.prompts_running,
        prompts_completed=ini.prompts or table.prompts_completed,
        strict_args=bool(ini.strict_args) or table.strict_args,
        stale=ini.stale or "fail",
        prompts_pending=ini.prompts_pending or table.prompts_pending,
        paths_from=paths_from,
        workflows_from=workflows_from,
        exclude=_exclude_setting(ini, config, where_table),
        hazards=ini.hazards or table.hazards,
        max_history_bytes=ini.max_history_bytes or table.max_history_bytes,
        max_blob_bytes=ini.max_blob_bytes or table.max_blob_bytes,
        model_calls=declared_model_calls(config),
    )


def declared_model_calls(config: Config) -> tuple[str, ...]:
    """The model calls the project adds to the catalogue: RT201's ``calls`` option, the one lint reads, so
    replay's "calls a model but recorded no prompt version" note knows a custom client too. A value that
    is not a list of dotted names is a ``ConfigError`` naming where it was set (lint refuses it the same way)."""
    table = config.rules.get("RT201")
    if table is None or "calls" not in table.values:
        return ()
    value = table.values["calls"]
    legacy = table.legacy.get("calls")
    where = config.table_name("rules.RT201" if legacy is None else "")
    if isinstance(value, str):
        raise ConfigError(config.path, legacy or "calls", f"must be a list of dotted qualified names, e.g. [{value!r}]",
                          table=where)
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise ConfigError(config.path, legacy or "calls", f"must be a list of dotted qualified names, not {value!r}",
                          table=where)
    for entry in value:
        if not all(part.isidentifier() for part in entry.split(".")):
            raise ConfigError(config.path, legacy or "calls", f"{entry!r} is not a dotted qualified name", table=where)
    return tuple(value)


def _exclude_setting(ini: PytestIni, config: Config, where_table: str) -> tuple[ExcludeSetting, ...]:
    """``replay_exclude`` of the ini file, else ``[tool.replaytest.replay] exclude``, as for pytest."""
    if ini.exclude and ini.folder is not None:
        return (ExcludeSetting(ini.exclude, ini.folder, f"{ini.table} replay_exclude in {ini.path}"),)
    if config.replay.exclude:
        return (ExcludeSetting(config.replay.exclude, config.root, where_table % "exclude"),)
    return ()
