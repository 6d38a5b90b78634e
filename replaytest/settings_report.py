"""``replaytest lint --show-settings``: every resolved setting and where it came from.

A setting comes from the configuration file when the file sets its key (or an ``extend-*`` key that adds
to it), from the command line when a flag changed it, else it is the default. The file is named once, at the
top, with its shape (top-level keys or the ``[tool.replaytest]`` table).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from replaytest.config import Config, RuleTable, keys_at_top_level

# Config fields that are not settings a user writes (the file itself, the project root, bookkeeping).
_NOT_SETTINGS = ("path", "root", "set_keys")
# The keys that feed a field besides its own (``extend-select`` adds to ``select``).
_ALSO_SET_BY = {
    "select": ("extend-select",),
    "ignore": ("extend-ignore",),
    "exclude": ("extend-exclude",),
    "per-file-ignores": ("extend-per-file-ignores",),
    "rules": ("idempotency-key-names", "model-calls"),
}


def _key(name: str) -> str:
    return name.replace("_", "-")


def _plain(value: Any) -> Any:
    """A setting's value as JSON/TOML would write it."""
    if isinstance(value, RuleTable):
        return dict(value.values)
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (tuple, list, frozenset)):
        return [_plain(item) for item in value]
    return value


def _origin(config: Config, key: str, overrides: Mapping[str, str], field_name: str) -> str:
    if field_name in overrides:
        return overrides[field_name]
    if any(written == key or written.startswith(f"{key}.") for written in config.set_keys) or any(
            other in config.set_keys for other in _ALSO_SET_BY.get(key, ())):
        return config.path.name if config.path is not None else "file"
    return "default"


def resolved_settings(config: Config, overrides: Mapping[str, str]) -> list[tuple[str, Any, str]]:
    """(key, value, origin) of every setting, nested tables as ``replay.paths``; origin is the file's name,
    the flag that changed it, or ``default``."""
    rows: list[tuple[str, Any, str]] = []
    for item in fields(config):
        if item.name in _NOT_SETTINGS:
            continue
        key = _key(item.name)
        value = getattr(config, item.name)
        if item.name in ("replay", "redact"):
            for inner in fields(value):
                nested = f"{key}.{_key(inner.name)}"
                origin = config.path.name if nested in config.set_keys and config.path is not None else "default"
                rows.append((nested, _plain(getattr(value, inner.name)), origin))
            continue
        rows.append((key, _plain(value), _origin(config, key, overrides, item.name)))
    return rows


def _source(config: Config, isolated: bool) -> str:
    if isolated:
        return "none: --isolated ignores every configuration file"
    if config.path is None:
        return "none found (every setting below is its default or a flag's)"
    shape = "top-level keys" if keys_at_top_level(config.path) else "[tool.replaytest]"
    if config.set_keys:
        return f"{config.path} ({shape})"
    return f"{config.path} (no replaytest settings in it: it fixes the project root only)"


def settings_lines(config: Config, overrides: Mapping[str, str], *, isolated: bool = False) -> list[str]:
    """The text form: the file, the root, then ``key = value  # origin`` per setting, TOML-like."""
    import json

    lines = [f"# configuration file: {_source(config, isolated)}", f"# project root: {config.root}"]
    for key, value, origin in resolved_settings(config, overrides):
        lines.append(f"{key} = {json.dumps(value, ensure_ascii=False)}  # {origin}")
    return lines


def settings_document(config: Config, overrides: Mapping[str, str], *, isolated: bool = False) -> dict[str, Any]:
    """The JSON form: ``{"file", "root", "settings": {key: {"value", "from"}}}``."""
    return {
        "version": 1,
        "file": None if isolated or config.path is None else str(config.path),
        "root": str(config.root),
        "settings": {key: {"value": value, "from": origin}
                     for key, value, origin in resolved_settings(config, overrides)},
    }
