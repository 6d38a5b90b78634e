"""Restate journal entries as the neutral history keeps them, and back to the service protocol's bytes.

A Restate server keeps each journal entry as the service-protocol message the SDK exchanged (``sys_journal.raw``,
protobuf). A history must not hold those bytes as they are: the payloads in them (handler input, step results,
call arguments, state values) would escape redaction. ``split_entry`` therefore cuts every payload field out of
the message and decodes it as JSON (the only payload codec read here; bytes that are not JSON refuse the
entry, nothing is ever unpickled), leaving the rest of the message as hex; ``join_entry`` puts the (possibly
redacted) payloads back, which gives the message the SDK's state machine replays. Protobuf readers accept
fields in any order, so appending the payload fields after the rest is a faithful message.

Entries are named as ``sys_journal.entry_type`` names them (``Command: Run``, ``Notification: Call``); the
table below gives each its protocol message type and the fields holding a payload, either a ``Value``
message (``content`` = field 1) or plain bytes. This module needs no SDK.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

# A payload field: (field number, True when it is a ``Value`` message wrapping the bytes in its field 1).
_VALUE = True
_BYTES = False


@dataclass(frozen=True)
class EntryType:
    code: int
    payload_fields: tuple[tuple[int, bool], ...] = ()


_NOTIFICATION_PAYLOADS = ((5, _VALUE),)

ENTRY_TYPES: dict[str, EntryType] = {
    "Command: Input": EntryType(0x0400, ((14, _VALUE),)),
    "Command: Output": EntryType(0x0401, ((14, _VALUE),)),
    "Command: GetLazyState": EntryType(0x0402),
    "Command: SetState": EntryType(0x0403, ((3, _VALUE),)),
    "Command: ClearState": EntryType(0x0404),
    "Command: ClearAllState": EntryType(0x0405),
    "Command: GetLazyStateKeys": EntryType(0x0406),
    "Command: GetEagerState": EntryType(0x0407, ((14, _VALUE),)),
    "Command: GetEagerStateKeys": EntryType(0x0408),
    "Command: GetPromise": EntryType(0x0409),
    "Command: PeekPromise": EntryType(0x040A),
    "Command: CompletePromise": EntryType(0x040B, ((2, _VALUE),)),
    "Command: Sleep": EntryType(0x040C),
    "Command: Call": EntryType(0x040D, ((3, _BYTES),)),
    "Command: OneWayCall": EntryType(0x040E, ((3, _BYTES),)),
    "Command: SendSignal": EntryType(0x0410, ((5, _VALUE),)),
    "Command: Run": EntryType(0x0411),
    "Command: AttachInvocation": EntryType(0x0412),
    "Command: GetInvocationOutput": EntryType(0x0413),
    "Command: CompleteAwakeable": EntryType(0x0414, ((2, _VALUE),)),
    "Notification: GetLazyState": EntryType(0x8002, _NOTIFICATION_PAYLOADS),
    "Notification: GetLazyStateKeys": EntryType(0x8006),
    "Notification: GetPromise": EntryType(0x8009, _NOTIFICATION_PAYLOADS),
    "Notification: PeekPromise": EntryType(0x800A, _NOTIFICATION_PAYLOADS),
    "Notification: CompletePromise": EntryType(0x800B, _NOTIFICATION_PAYLOADS),
    "Notification: Sleep": EntryType(0x800C),
    "Notification: Call": EntryType(0x800D, _NOTIFICATION_PAYLOADS),
    "Notification: CallInvocationId": EntryType(0x800E),
    "Notification: Run": EntryType(0x8011, _NOTIFICATION_PAYLOADS),
    "Notification: AttachInvocation": EntryType(0x8012, _NOTIFICATION_PAYLOADS),
    "Notification: GetInvocationOutput": EntryType(0x8013, _NOTIFICATION_PAYLOADS),
    "Notification: Signal": EntryType(0xFBFF, _NOTIFICATION_PAYLOADS),
}

INPUT = "Command: Input"
OUTPUT = "Command: Output"
START_MESSAGE = 0x0000


class WireError(ValueError):
    """Bytes that are not the protobuf message they should be, or a payload that is not JSON."""


# --- protobuf wire format ----------------------------------------------------------------------------


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise WireError("a varint runs past the end of the message")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def fields(data: bytes) -> list[tuple[int, int, bytes]]:
    """The message's fields as (number, wire type, the field's encoded bytes including its tag)."""
    out = []
    at = 0
    while at < len(data):
        start = at
        tag, at = _read_varint(data, at)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            _, at = _read_varint(data, at)
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        elif wire == 2:
            length, at = _read_varint(data, at)
            at += length
        else:
            raise WireError(f"unsupported protobuf wire type {wire} in field {number}")
        if at > len(data) or number == 0:
            raise WireError(f"field {number} runs past the end of the message")
        out.append((number, wire, data[start:at]))
    return out


def field_content(encoded: bytes) -> bytes:
    """The content of one length-delimited field (its encoded bytes, tag included)."""
    _, at = _read_varint(encoded, 0)
    length, at = _read_varint(encoded, at)
    return encoded[at : at + length]


def length_field(number: int, content: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(content)) + content


def varint_field(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def string_fields(data: bytes) -> dict[int, str]:
    """The message's length-delimited fields that are UTF-8 text, by number (the last one wins)."""
    out = {}
    for number, wire, encoded in fields(data):
        if wire == 2:
            try:
                out[number] = field_content(encoded).decode("utf-8")
            except UnicodeDecodeError:
                continue
    return out


def frame(code: int, body: bytes) -> bytes:
    """One service-protocol message: type (16 bits), flags (16 bits), length (32 bits), big-endian."""
    return struct.pack(">HHI", code, 0, len(body)) + body


# --- payloads ----------------------------------------------------------------------------------------


# JSON layouts payloads are written in: the Python SDK's serde uses ``json.dumps`` as it is; other SDKs
# (TypeScript's JSON.stringify, Java's Jackson) write compact JSON.
_STYLES: dict[str, tuple[tuple[str, str], bool]] = {
    "python": ((", ", ": "), True),
    "python-unicode": ((", ", ": "), False),
    "compact": ((",", ":"), False),
    "compact-ascii": ((",", ":"), True),
}
_DEFAULT_STYLE = "python"


def decode_payload(content: bytes) -> dict[str, Any]:
    """A payload as the history stores it: ``{"json": value}``, or ``{"empty": true}`` for no bytes."""
    if not content:
        return {"empty": True}
    try:
        value = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise WireError(f"the payload is not JSON ({type(error).__name__}); replaytest reads only JSON payloads") from None
    # The state machine compares a command's payload bytes (a call's argument, a state value) with the
    # recorded ones, so the value is written back in the layout it was recorded in.
    for style, (separators, ascii_only) in _STYLES.items():
        if json.dumps(value, separators=separators, ensure_ascii=ascii_only).encode("utf-8") == content:
            return {"json": value, "style": style} if style != _DEFAULT_STYLE else {"json": value}
    return {"json": value}


def encode_payload(payload: Any) -> bytes:
    if not isinstance(payload, dict):
        raise WireError("a stored payload is not an object")
    if payload.get("empty") is True:
        return b""
    if "json" not in payload:
        raise WireError("a stored payload has neither 'json' nor 'empty'")
    separators, ascii_only = _STYLES.get(str(payload.get("style", _DEFAULT_STYLE)), _STYLES[_DEFAULT_STYLE])
    return json.dumps(payload["json"], separators=separators, ensure_ascii=ascii_only).encode("utf-8")


def payload_value(payload: Any) -> Any:
    """The JSON value of a stored payload (None for an empty one)."""
    return payload.get("json") if isinstance(payload, dict) else None


def split_entry(entry_type: str, raw: bytes) -> dict[str, Any]:
    """The stored form of one journal entry: its type, the message without payload fields (hex) and the
    payloads (JSON). ``WireError`` for an entry type this module does not know or a payload not JSON."""
    known = ENTRY_TYPES.get(entry_type)
    if known is None:
        raise WireError(f"journal entry type {entry_type!r} is not one replaytest knows")
    payload_numbers = dict(known.payload_fields)
    rest = bytearray()
    payloads = []
    for number, wire, encoded in fields(raw):
        if number in payload_numbers and wire == 2:
            content = field_content(encoded)
            if payload_numbers[number] is _VALUE:
                inner = [field_content(e) for n, w, e in fields(content) if n == 1 and w == 2]
                content = inner[-1] if inner else b""
            payloads.append({"field": number, **decode_payload(content)})
        else:
            rest += encoded
    return {"type": entry_type, "rest": rest.hex(), "payloads": payloads}


def join_entry(stored: Any) -> bytes:
    """The protocol message (framed) of one stored entry; ``WireError`` naming what is wrong with it."""
    if not isinstance(stored, dict):
        raise WireError("a journal entry is not an object")
    entry_type = stored.get("type")
    known = ENTRY_TYPES.get(entry_type) if isinstance(entry_type, str) else None
    if known is None:
        raise WireError(f"journal entry type {entry_type!r} is not one replaytest knows")
    try:
        body = bytearray(bytes.fromhex(str(stored.get("rest", ""))))
    except ValueError:
        raise WireError("'rest' is not hex") from None
    fields(bytes(body))  # a damaged message is refused here, not by the state machine
    wrapped = dict(known.payload_fields)
    payloads = stored.get("payloads", [])
    if not isinstance(payloads, list):
        raise WireError("'payloads' is not a list")
    for payload in payloads:
        number = payload.get("field") if isinstance(payload, dict) else None
        if not isinstance(number, int) or number not in wrapped:
            raise WireError(f"payload field {number!r} is not a payload field of {entry_type}")
        content = encode_payload(payload)
        body += length_field(number, length_field(1, content) if wrapped[number] is _VALUE else content)
    return frame(known.code, bytes(body))


# An invocation id as Restate prints it: "inv_", the id scheme version "1", then the partition key (u64) and the
# invocation's uuid (u128), each in base62 (digits, lower case, upper case) padded to a fixed width.
_ID_PREFIX = "inv_1"
_BASE62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ID_WIDTHS = ((11, 8), (22, 16))  # (characters, bytes) of the partition key, then of the uuid
_U64 = (1 << 64) - 1


def invocation_id_bytes(invocation_id: str) -> bytes | None:
    """The invocation id's bytes as the server sends them in the start message (partition key then uuid),
    from its printed form; None when ``invocation_id`` is not one. The printed numbers are the base62 of
    each part's big-endian bytes read as a little-endian integer, as Restate encodes them."""
    if not invocation_id.startswith(_ID_PREFIX):
        return None
    text = invocation_id[len(_ID_PREFIX):]
    if len(text) != sum(width for width, _ in _ID_WIDTHS) or any(char not in _BASE62 for char in text):
        return None
    raw = b""
    for width, size in _ID_WIDTHS:
        number = 0
        for char in text[:width]:
            number = number * 62 + _BASE62.index(char)
        text = text[width:]
        if number >> (8 * size):
            return None
        raw += number.to_bytes(size, "little")
    return raw


def _rotate(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _U64


def _siphash13(data: bytes) -> int:
    """SipHash-1-3 with a zero key: what Rust's ``DefaultHasher::new()`` computes."""
    v0, v1, v2, v3 = 0x736F6D6570736575, 0x646F72616E646F6D, 0x6C7967656E657261, 0x7465646279746573

    def sip_round() -> None:
        nonlocal v0, v1, v2, v3
        v0 = (v0 + v1) & _U64
        v1 = _rotate(v1, 13) ^ v0
        v0 = _rotate(v0, 32)
        v2 = (v2 + v3) & _U64
        v3 = _rotate(v3, 16) ^ v2
        v0 = (v0 + v3) & _U64
        v3 = _rotate(v3, 21) ^ v0
        v2 = (v2 + v1) & _U64
        v1 = _rotate(v1, 17) ^ v2
        v2 = _rotate(v2, 32)

    whole = len(data) - len(data) % 8
    for at in range(0, whole, 8):
        word = int.from_bytes(data[at : at + 8], "little")
        v3 ^= word
        sip_round()
        v0 ^= word
    last = ((len(data) & 0xFF) << 56) | int.from_bytes(data[whole:], "little")
    v3 ^= last
    sip_round()
    v0 ^= last
    v2 ^= 0xFF
    for _ in range(3):
        sip_round()
    return v0 ^ v1 ^ v2 ^ v3


def random_seed(id_bytes: bytes) -> int:
    """The seed of the invocation's ``ctx.random()`` as the server derives it from the id's bytes and sends
    it in the start message: Rust's default hash of the byte array (its length as a u64, then the bytes)."""
    return _siphash13(len(id_bytes).to_bytes(8, "little") + id_bytes)


# The start message's fields (service protocol): id, debug id, known entries, partial state, key, random seed.
_START_RANDOM_SEED = 9


def start_message(invocation_id: str, known_entries: int, key: str | None) -> bytes:
    """The service protocol's start message for replaying ``known_entries`` entries (no eager state: every
    state read the run made is recorded in its journal). The id and the random seed are the ones the server
    sent when ``invocation_id`` is a Restate invocation id; otherwise the text stands for the id and the SDK
    seeds its random from that (``ctx.random()`` then draws other values than the invocation did)."""
    id_bytes = invocation_id_bytes(invocation_id)
    body = (
        length_field(1, id_bytes if id_bytes is not None else invocation_id.encode("utf-8"))
        + length_field(2, invocation_id.encode("utf-8"))
        + varint_field(3, known_entries)
        + varint_field(5, 1)  # partial state
        + (length_field(6, key.encode("utf-8")) if key else b"")
        + (varint_field(_START_RANDOM_SEED, random_seed(id_bytes)) if id_bytes is not None else b"")
    )
    return frame(START_MESSAGE, body)


def input_entry(argument: dict[str, Any]) -> dict[str, Any]:
    """The stored form of the handler's input command from the history's input payload."""
    return {"type": INPUT, "rest": "", "payloads": [{"field": 14, **argument}]}
