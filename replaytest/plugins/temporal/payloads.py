"""Finding a corrupt ``json/plain`` payload in a parsed Temporal history: ``corrupt_json_payload``.

A payload whose metadata says ``json/plain`` but whose data is not JSON cannot have been written by a
Temporal SDK's JSON converter: the history was damaged (truncated, edited, mangled in an export). Left to
the replay, it surfaces as a decoding failure of the workflow code and reads like a divergence, or is
never decoded at all and passes. Checked before the replay, it is an ``error`` naming the event (id and
type) and the JSON path of the payload's data, as protobuf JSON spells the fields.

The walk uses protobuf's public reflection only (descriptors, ``ListFields``) and visits only the fields
that can hold a ``Payload``, worked out once per message type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

PAYLOAD_TYPE = "temporal.api.common.v1.Payload"
JSON_PLAIN = b"json/plain"
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Message type full name -> the names of its fields that hold (or can lead to) a Payload.
_PAYLOAD_FIELDS: dict[str, frozenset[str]] = {}


def corrupt_json_payload(events: Sequence[Any]) -> tuple[int, str, str] | None:
    """``(index of the event, JSON path of the payload's data, why)`` for the first ``json/plain``
    payload of the protobuf ``HistoryEvent``s ``events`` whose data is not JSON; None when every one
    decodes."""
    for index, event in enumerate(events):
        for path, payload in _payloads(event, f"$.events[{index}]"):
            if payload.metadata.get("encoding") != JSON_PLAIN:
                continue
            try:
                json.loads(payload.data)
            except (ValueError, UnicodeDecodeError) as error:
                return index, f"{path}.data", _why(error, payload.data)
    return None


def _why(error: Exception, data: bytes) -> str:
    if not data:
        return "its data is empty"
    if isinstance(error, json.JSONDecodeError):
        return f"byte {error.pos} of {len(data)}: {error.msg}"
    return str(error).splitlines()[0][:200]


def _payloads(message: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every Payload inside ``message`` with its protobuf JSON path. ``ListFields`` yields only the fields
    that are set (an event has one of its fifty attribute messages), so the walk costs what the event holds."""
    descriptor = message.DESCRIPTOR
    if descriptor.full_name == PAYLOAD_TYPE:
        yield path, message
        return
    wanted = _fields_to_payloads(descriptor)
    if not wanted:
        return
    for field, value in message.ListFields():
        if field.name not in wanted:
            continue
        where = f"{path}.{field.json_name}"
        if _is_map(field):
            for key in sorted(value):
                yield from _payloads(value[key], _join(where, key))
        elif _is_repeated(field):
            for position, item in enumerate(value):
                yield from _payloads(item, f"{where}[{position}]")
        else:
            yield from _payloads(value, where)


def _fields_to_payloads(descriptor: Any) -> frozenset[str]:
    """The message fields of ``descriptor`` through which a Payload can be reached (cached per type)."""
    known = _PAYLOAD_FIELDS.get(descriptor.full_name)
    if known is not None:
        return known
    # Every message type reachable from here, then "reaches a Payload" to a fixed point: exact for each
    # of them (the set is closed under its fields), so all are cached; recursive types need no special case.
    targets: dict[str, list[tuple[str, Any]]] = {}
    pending = [descriptor]
    while pending:
        current = pending.pop()
        if current.full_name in targets or current.full_name in _PAYLOAD_FIELDS:
            continue
        targets[current.full_name] = []
        for field in current.fields:
            target = _target(field)
            if target is not None:
                targets[current.full_name].append((field.name, target))
                pending.append(target)
    reaches = {name for name, fields in _PAYLOAD_FIELDS.items() if fields} | {PAYLOAD_TYPE}
    changed = True
    while changed:
        changed = False
        for name, fields in targets.items():
            if name not in reaches and any(target.full_name in reaches for _, target in fields):
                reaches.add(name)
                changed = True
    for name, fields in targets.items():
        _PAYLOAD_FIELDS[name] = frozenset(field for field, target in fields if target.full_name in reaches)
    return _PAYLOAD_FIELDS[descriptor.full_name]


def _target(field: Any) -> Any:
    """The message type a field holds (a map's value type), or None for a scalar one."""
    target = field.message_type
    if target is not None and target.GetOptions().map_entry:
        target = target.fields_by_name["value"].message_type
    return target


def _is_map(field: Any) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _is_repeated(field: Any) -> bool:
    # ``is_repeated`` since protobuf 5.29 (``label`` is gone in 7); ``label`` before it.
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else field.label == field.LABEL_REPEATED


def _join(path: str, key: Any) -> str:
    key = str(key)
    return f"{path}.{key}" if _PLAIN_KEY.fullmatch(key) else f"{path}[{json.dumps(key, ensure_ascii=True)}]"
