"""Redaction: scrub secrets and personal data from a history before it is shared, without changing
how it replays.

What is selected:

- **key names by pattern**: a key whose normalised name (lower case, ``-``/``_``/spaces dropped)
  contains a sensitive fragment (``password``, ``pwd``, ``secret``, ``token``, ``apikey``,
  ``accesskey``, ``authorization``, ``cookie``, ``email``, ``cardnumber`` …; ``DEFAULT_KEY_PATTERN``),
  or equals one of the configured ``key_names`` — everything under it is replaced;
- **values by pattern**, in every string, free text included: the credential shapes of the table in
  ``history/secret_rules.py`` (provider tokens such as ``sk-…``, ``AKIA…``, ``ghp_…``, ``xoxb-…``,
  ``AIza…``, JWTs, private key blocks; and secrets known by their context: ``Bearer …``,
  ``AccountKey=…``, the password of ``https://user:…@host``, ``password=``/``*_token:`` assignments of
  high entropy), e-mail addresses and card numbers that pass the Luhn check;
- **JSON paths**, a small dialect: ``$``, ``.name``, ``['name']``, ``[3]``, ``[*]``, ``.*`` and
  ``..name`` (any depth), e.g. ``$.input.customer.email`` or ``$.events[*].result.token``.

Every string of a history is looked at: the run's input, result and error, each event's result, error
and unknown (importer) fields, and the workflow and run ids (values only: the ids are not payloads).
Names, ``args_digest``, idempotency keys and prompt versions are never changed, nor are an engine's
**raw fields** (``RAW_FIELDS``): protocol bytes, event ids and positions, engine-made ids and payload
layouts, which the engine's replayer decodes or derives from. Whatever key names, JSON paths and value
patterns select, those stay as recorded, so redaction changes payload values only.

Replacements are **pseudonyms**, deterministic within one history and shape-preserving, so code that
branches on a redacted value still takes the recorded path: a keyed hash (HMAC-SHA256, one random key
per history unless ``secret`` is given) maps the same value to the same pseudonym; an e-mail stays an
e-mail and keeps its domain (``keep_email_domain``), a card number stays a Luhn-valid number of the
same length, numbers stay numbers of the same size, other strings become ``[redacted:<hash>]``; a
credential found by value becomes ``[redacted-<rule id>:<hash>]`` in its text, the context of a context
rule kept (``Bearer [redacted-bearer:…]``), never a token of the same shape, which scanners would
find again. A configured ``replacement`` other than the default replaces selected values literally
instead.

This module is the one implementation of these value rules: ``replaytest redact`` and every importer
(DBOS, LangGraph, Temporal) build their redactor with ``Redactor.configured`` and hand it the values of
their payloads (engine code only says which parts of a payload are values), so an e-mail keeps its
domain and the same value gets the same pseudonym whichever engine recorded it.

``redact_history`` records the JSON paths it changed in the history's ``redacted`` list (see
``docs/design.md``), so a divergence report can say the history was redacted and where.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from replaytest.history.blobs import BlobRemoval, BlobStore, mark_for_removal, remove_unreferenced
from replaytest.history.io import load_history, save_history
from replaytest.history.model import ErrorInfo, History
from replaytest.history.secret_rules import holds_secret, replace_secrets
from replaytest.history.strict_json import MAX_DEPTH, join_path

DEFAULT_KEY_NAMES: tuple[str, ...] = (
    "api_key",
    "password",
    "passwd",
    "secret",
    "client_secret",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "authorization",
    "cookie",
    "set_cookie",
    "email",
    "ssn",
)
DEFAULT_REPLACEMENT = "[redacted]"

# Per engine (``workflow.engine``), the fields of its histories that are not values but the engine's own
# encoding, as JSON paths of the dialect below from the history's ``$`` (a node inside one is raw too).
# Redaction never changes them, whatever it is configured to select: changed, the history no longer
# decodes or no longer lines up with what the engine derives from it. (A Restate journal entry's message
# bytes are hex; ASCII text in hex is mostly decimal digits, so an id or key there could pass for a
# Luhn-valid card number, and the rewritten bytes failed replay with "cannot decode protocol message".)
# Temporal documents are redacted by ``plugins/temporal/redact.py``, which leaves every payload's
# ``metadata`` and the bytes of payloads it cannot read as they are.
RAW_FIELDS: dict[str, tuple[str, ...]] = {
    # plugins/restate/values.py: each journal entry's type, index and protocol message without its
    # payload fields (``rest``, hex), each payload's field number and JSON layout (``style``, ``empty``;
    # only ``json`` is a value); the input's layout; the invocation id, which the start message carries.
    "restate": (
        "$.workflow.id",
        "$.input.argument.style",
        "$.input.argument.empty",
        "$.events[*].journal[*].type",
        "$.events[*].journal[*].index",
        "$.events[*].journal[*].rest",
        "$.events[*].journal[*].payloads[*].field",
        "$.events[*].journal[*].payloads[*].style",
        "$.events[*].journal[*].payloads[*].empty",
    ),
    # plugins/azure_durable/dtfx_history.py: what rebuilds the Durable Task history the SDK replays
    # (event types and ids, row positions, episodes, timestamps); a sub-orchestration's ``instance_id``
    # and a failure's ``details`` are values.
    "azure_durable": (
        "$.events[*].azure.event_type",
        "$.events[*].azure.event_id",
        "$.events[*].azure.index",
        "$.events[*].azure.episode",
        "$.events[*].azure.timestamp",
        "$.events[*].azure.fire_at",
        "$.events[*].azure.condensed",
        "$.events[*].azure.input_not_stored",
        "$.events[*].azure.completion.event_type",
        "$.events[*].azure.completion.index",
        "$.events[*].azure.completion.episode",
        "$.events[*].azure.completion.timestamp",
    ),
    # plugins/aws_durable/importer.py: what rebuilds the checkpoint operations the SDK replays (operation id,
    # which the SDK derives from the position; type, subtype, parent, status, the payload's envelope tag).
    "aws_durable": (
        "$.events[*].aws.id",
        "$.events[*].aws.type",
        "$.events[*].aws.sub_type",
        "$.events[*].aws.parent_id",
        "$.events[*].aws.status",
        "$.events[*].aws.tag",
        "$.events[*].aws.lossy",
        "$.events[*].aws.unnamed",
    ),
    # plugins/dbos: the function id the replayer finds each recorded operation by.
    "dbos": ("$.events[*].function_id",),
    # plugins/langgraph: the input checkpoint's id (``run_id``), from which LangGraph derives the task ids
    # the replay compares with the recorded ``task_id``; call and interrupt positions, node and task names,
    # super-steps, Send and branch markers; the number of a nested run (``plugins/langgraph/nested.py``).
    "langgraph": (
        "$.workflow.run_id",
        "$.events[*].nested",
        "$.events[*].task_id",
        "$.events[*].call_index",
        "$.events[*].interrupt_index",
        "$.events[*].pending",
        "$.events[*].task",
        "$.events[*].node",
        "$.events[*].super_step",
        "$.events[*].send",
        "$.events[*].goes_to",
    ),
    # the journal runtime: a deprecated patch's marker.
    "journal": ("$.events[*].deprecated",),
}


class RedactError(ValueError):
    """A JSON path that the dialect does not accept; the message points at the offending character."""


def normalise_key(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name).lower()


# A compiled path is a tuple of segments: ("key", name), ("index", n), ("wild",), ("deep", name).
Segment = tuple


def parse_json_path(path: str) -> tuple[Segment, ...]:
    """Compile one JSON path of the dialect above; ``RedactError`` if it is not one."""
    if not path.startswith("$"):
        raise RedactError(f"JSON path {path!r} must start with '$'")
    segments: list[Segment] = []
    i = 1
    name_re = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
    while i < len(path):
        if path.startswith("..", i):
            match = name_re.match(path, i + 2)
            if not match:
                raise RedactError(f"JSON path {path!r}: expected a key name after '..' at column {i + 3}")
            segments.append(("deep", match.group()))
            i = match.end()
        elif path[i] == ".":
            if path.startswith(".*", i):
                segments.append(("wild",))
                i += 2
                continue
            match = name_re.match(path, i + 1)
            if not match:
                raise RedactError(f"JSON path {path!r}: expected a key name after '.' at column {i + 2}")
            segments.append(("key", match.group()))
            i = match.end()
        elif path[i] == "[":
            close = _bracket_end(path, i)
            inner = path[i + 1 : close].strip()
            if inner == "*":
                segments.append(("wild",))
            elif re.fullmatch(r"\d+", inner):
                segments.append(("index", int(inner)))
            elif len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                segments.append(("key", inner[1:-1]))
            else:
                raise RedactError(f"JSON path {path!r}: expected [n], [*] or ['name'] at column {i + 1}")
            i = close + 1
        else:
            raise RedactError(f"JSON path {path!r}: unexpected {path[i]!r} at column {i + 1}")
    return tuple(segments)


def _bracket_end(path: str, start: int) -> int:
    quote = None
    for j in range(start + 1, len(path)):
        char = path[j]
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "]":
            return j
    raise RedactError(f"JSON path {path!r}: '[' at column {start + 1} is never closed")


# Fragments of normalised key names that hold secrets or personal data. ``token`` spares counters
# such as ``max_tokens`` / ``prompt_tokens`` (numbers a workflow may branch on, and no secret); short
# fragments are anchored: ``ssn`` only at either end, since ``class_name`` normalises to ``classname``.
DEFAULT_KEY_PATTERN = re.compile(
    r"password|passwd|passphrase|pwd|secret|(?<!max)token(?!s|count|ize|limit)|apikey|accesskey|privatekey"
    r"|authorization|authtoken|credential|cookie|sessionid|email|^ssn|ssn$|socialsecurity|cardnumber|creditcard"
    r"|ccnumber|^cvv|^cvc|^iban$|^pin$|^auth$"
)

_EMAIL = re.compile(r"(?<![\w.%+-])([A-Za-z0-9._%+-]+)@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})(?![\w-])")
# A card number stands apart from letters and digits: a run of digits inside a UUID or a hex digest
# (``9a89-61644515145e``) is not one, however Luhn reads it.
_CARD = re.compile(r"(?<![0-9A-Za-z-])\d(?:[ -]?\d){12,18}(?![0-9A-Za-z-])")

# Raw fields as a tree of steps, walked beside the document: a node's subtree says which steps below it
# lead to a raw field (``_ANY`` any key or index, ``_END`` the field itself), so the walk costs one lookup
# per node and none at all away from raw fields.
RawTree = dict[Any, Any]
_ANY = ("any",)
_END = ("end",)


def raw_tree(paths: Iterable[str]) -> RawTree:
    """The tree of JSON ``paths`` (``$``, ``.name``, ``['name']``, ``[n]``, ``[*]``, ``.*``; no ``..``)."""
    root: RawTree = {}
    for path in paths:
        node = root
        for segment in parse_json_path(path):
            if segment[0] == "deep":
                raise RedactError(f"raw field {path!r}: '..' is not allowed, a raw field is at one place")
            node = node.setdefault(_ANY if segment[0] == "wild" else segment[1], {})
        node[_END] = True
    return root


def _raw_below(tree: RawTree | None, step: Any) -> RawTree | None:
    """The subtree of the child ``step`` (a key or an index); None when no raw field is at or below it."""
    if tree is None:
        return None
    named, anything = tree.get(step), tree.get(_ANY)
    if named is None or anything is None:
        return named if anything is None else anything
    return _merge(named, anything)


def _merge(one: RawTree, other: RawTree) -> RawTree:
    merged = dict(one)
    for key, subtree in other.items():
        merged[key] = _merge(merged[key], subtree) if isinstance(merged.get(key), dict) and isinstance(subtree, dict) else subtree
    return merged


_RAW_TREES: dict[str, RawTree] = {engine: raw_tree(paths) for engine, paths in RAW_FIELDS.items()}


class RedactionSettings(Protocol):
    """What ``[tool.replaytest.redact]`` configures (``replaytest.config.RedactSettings``)."""

    @property
    def key_names(self) -> Sequence[str]: ...
    @property
    def json_paths(self) -> Sequence[str]: ...
    @property
    def replacement(self) -> Any: ...


@dataclass(frozen=True)
class Redactor:
    """Compiled selectors and how to replace what they select. ``value`` counts what it replaced."""

    key_names: frozenset[str]
    paths: tuple[tuple[Segment, ...], ...]
    replacement: Any = DEFAULT_REPLACEMENT
    key_pattern: re.Pattern[str] | None = DEFAULT_KEY_PATTERN
    keep_email_domain: bool = True
    secret: bytes | None = None  # the pseudonym key; None draws a random one per history
    value_patterns: bool = True
    # False when a replacement other than the default is configured: every selected value, and every
    # string holding a recognised secret, becomes ``replacement`` whole.
    pseudonyms: bool = True

    @classmethod
    def build(
        cls, key_names: Iterable[str] = (), json_paths: Iterable[str] = (), replacement: Any = DEFAULT_REPLACEMENT,
        *, keep_email_domain: bool = True, secret: bytes | None = None,
    ) -> Redactor:
        return cls(
            pseudonyms=replacement == DEFAULT_REPLACEMENT,
            key_names=frozenset(normalise_key(name) for name in key_names),
            paths=tuple(parse_json_path(path) for path in json_paths),
            replacement=replacement,
            keep_email_domain=keep_email_domain,
            secret=secret,
        )

    @classmethod
    def configured(cls, settings: RedactionSettings, keys: Iterable[str] = (), json_paths: Iterable[str] = ()) -> Redactor:
        """The redactor of ``replaytest redact`` and of every importer: command-line ``keys``/``json_paths``
        if given, else the ``[tool.replaytest.redact]`` settings, else ``DEFAULT_KEY_NAMES``."""
        keys, json_paths = tuple(keys), tuple(json_paths)
        return cls.build(keys or settings.key_names or DEFAULT_KEY_NAMES, json_paths or settings.json_paths, settings.replacement)

    def session(self, encoded: EncodedValues | None = None, raw: RawTree | None = None) -> RedactionSession:
        """State for one history: its pseudonym key, the paths replaced so far, how the engine's document
        encodes values (``EncodedValues``; none for neutral histories) and its raw fields (``raw_tree`` of
        the engine's ``RAW_FIELDS``), never changed."""
        key = self.secret if self.secret is not None else secrets.token_bytes(32)
        return RedactionSession(self, key, encoded=encoded, raw=raw or None)

    def value(self, value: Any, base: str = "$") -> tuple[Any, int]:
        """Redact a plain JSON value (``$`` is the value): the new value and how many values were
        replaced. The input is not modified."""
        session = self.session()
        return session.scrub(value, base), len(session.paths)

    def key_matches(self, key: str) -> bool:
        normal = normalise_key(key)
        if normal in self.key_names:
            return True
        return self.key_pattern is not None and bool(self.key_pattern.search(normal))


class EncodedValues(Protocol):
    """How an engine's document holds values in encoded form (Temporal's base64 payloads): the only
    engine-specific part of redacting it. ``RedactionSession.scrub`` hands each such node to
    ``redact``, which decodes it, scrubs the value with the same session and encodes it again."""

    def holds(self, node: dict[str, Any]) -> bool:
        """Whether ``node`` is an encoded value (never replaced whole: its encoding must survive)."""
        ...

    def redact(self, node: dict[str, Any], path: str, steps: Sequence[Any], sensitive: bool, session: RedactionSession) -> Any:
        """``node`` with its value redacted (``sensitive``: all of it is, under a sensitive key or path)."""
        ...


@dataclass
class RedactionSession:
    """Redacts the parts of one document: same value, same pseudonym; ``paths`` lists what changed."""

    redactor: Redactor
    key: bytes
    paths: list[str] = field(default_factory=list)
    encoded: EncodedValues | None = None
    raw: RawTree | None = None  # the engine's raw fields (``RAW_FIELDS``) as a tree

    def scrub(self, value: Any, path: str, sensitive: bool = False, steps: Sequence[Any] = ()) -> Any:
        """``value`` redacted; ``path`` and ``steps`` (its keys and indices from ``$``) say where it sits."""
        return self._walk(value, path, sensitive, list(steps) if self.redactor.paths else None, 0, self._raw_at(steps))

    def _encoded(self, value: Any) -> bool:
        return self.encoded is not None and isinstance(value, dict) and self.encoded.holds(value)

    def _raw_at(self, steps: Sequence[Any]) -> RawTree | None:
        tree = self.raw
        for step in steps:
            tree = _raw_below(tree, step)
        return tree

    def is_raw(self, steps: Sequence[Any]) -> bool:
        """Whether the node at ``steps`` is one of the engine's raw fields (left as it is)."""
        tree = self._raw_at(steps)
        return tree is not None and _END in tree

    def _whole(self, value: Any, raw: RawTree | None) -> bool:
        """Whether a literal replacement may replace ``value`` whole: not a raw field nor a container
        holding one (``raw``: its subtree of raw fields), nor a container of an engine's document (its
        structure, and the encoded values in it, must survive for the engine to read it)."""
        if raw is not None:
            return False
        return self.encoded is None or not isinstance(value, (dict, list))

    def selected(self, steps: Sequence[Any]) -> bool:
        return any(_path_matches(selector, steps) for selector in self.redactor.paths)

    def _walk(self, value: Any, path: str, sensitive: bool, steps: list[Any] | None, depth: int, raw: RawTree | None) -> Any:
        if raw is not None and _END in raw:
            return value
        encoded = self._encoded(value)
        if steps is not None and not sensitive and any(_path_matches(selector, steps) for selector in self.redactor.paths):
            sensitive = True
            if not self.redactor.pseudonyms and self._whole(value, raw):  # a literal replaces the whole selection
                return self._replace_whole(value, path)
        if depth > MAX_DEPTH:  # never leak what is too deep to look at
            self.paths.append(path)
            return self._literal_or(lambda: f"[redacted:{self._hash('deep', repr(value))[:10]}]")
        if encoded:
            assert self.encoded is not None
            return self.encoded.redact(value, path, steps or (), sensitive, self)
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                child = sensitive or (isinstance(key, str) and self.redactor.key_matches(key))
                below = _raw_below(raw, key)
                if child and not sensitive and not self.redactor.pseudonyms and self._whole(item, below):
                    out[key] = self._replace_whole(item, join_path(path, key))
                    continue
                out[key] = self._walk(item, join_path(path, key), child, None if steps is None else [*steps, key], depth + 1, below)
            return out
        if isinstance(value, list):
            return [
                self._walk(item, f"{path}[{index}]", sensitive, None if steps is None else [*steps, index], depth + 1,
                           _raw_below(raw, index))
                for index, item in enumerate(value)
            ]
        if isinstance(value, str):
            new = self.pseudonym(value) if sensitive else self.text(value)
        elif sensitive and isinstance(value, (int, float)) and not isinstance(value, bool):
            new = self._literal_or(lambda: self._number(value))
        else:
            return value
        if new != value:
            self.paths.append(path)
        return new

    # --- replacements ---------------------------------------------------------------------------------

    def _replace_whole(self, value: Any, path: str) -> Any:
        if value != self.redactor.replacement:
            self.paths.append(path)
        return self.redactor.replacement

    def _literal_or(self, make: Any) -> Any:
        return make() if self.redactor.pseudonyms else self.redactor.replacement

    def _hash(self, kind: str, text: str) -> str:
        return hmac.new(self.key, f"{kind}\0{text}".encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    def pseudonym(self, value: str) -> str:
        """The whole string is sensitive: keep its shape where it has a recognisable one."""
        if not self.redactor.pseudonyms:
            return str(self.redactor.replacement)
        if _EMAIL.fullmatch(value.strip()):
            return self.text(value)
        if _CARD.fullmatch(value) and _luhn(re.sub(r"\D", "", value)):
            return self._card(value)
        if not value:
            return value
        return f"[redacted:{self._hash('str', value)[:10]}]"

    def text(self, value: str) -> str:
        """Free text: replace each recognisable secret, e-mail address and card number inside it."""
        if not self.redactor.value_patterns or len(value) < 6:
            return value
        if not self.redactor.pseudonyms:
            return self.redactor.replacement if self._holds_secret(value) else value
        out = value
        out = replace_secrets(out, self._secret)
        if "@" in out:
            out = _EMAIL.sub(self._email, out)
        if _CARD.search(out):
            out = _CARD.sub(lambda m: self._card(m.group()) if _luhn(re.sub(r"\D", "", m.group())) else m.group(), out)
        return out

    def _holds_secret(self, value: str) -> bool:
        if holds_secret(value):
            return True
        if "@" in value and _EMAIL.search(value):
            return True
        return any(_luhn(re.sub(r"\D", "", match.group())) for match in _CARD.finditer(value))

    def _secret(self, kind: str, text: str) -> str:
        if not self.redactor.pseudonyms:
            return str(self.redactor.replacement)
        return f"[redacted-{kind}:{self._hash(kind, text)[:10]}]"

    def _email(self, match: re.Match[str]) -> str:
        if not self.redactor.pseudonyms:
            return str(self.redactor.replacement)
        domain = match.group(2) if self.redactor.keep_email_domain else "example.invalid"
        return f"user-{self._hash('email', match.group().lower())[:10]}@{domain}"

    def _card(self, text: str) -> str:
        if not self.redactor.pseudonyms:
            return str(self.redactor.replacement)
        digits = re.sub(r"\D", "", text)
        stream = self._hash("card", digits)
        fresh = [str(int(stream[i % len(stream)], 16) % 10) for i in range(len(digits) - 1)]
        fresh[0] = digits[0]  # keep the network (first digit) so the number stays plausible
        fresh.append(_luhn_digit("".join(fresh)))
        it = iter(fresh)
        return "".join(next(it) if char.isdigit() else char for char in text)

    def _number(self, value: int | float) -> int | float:
        stream = int(self._hash("num", repr(value)), 16)
        if isinstance(value, int):
            digits = len(str(abs(value)))
            low = 10 ** (digits - 1) if digits > 1 else 0
            fresh = low + stream % (10**digits - low)
            return -fresh if value < 0 else fresh
        magnitude = abs(value)
        fresh_float = (stream % 10**6) / 10**6 * (magnitude if magnitude else 1.0)
        return -fresh_float if value < 0 else fresh_float


def _luhn(digits: str) -> bool:
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for index, char in enumerate(reversed(digits)):
        number = int(char)
        if index % 2 == 1:
            number = number * 2 - 9 if number > 4 else number * 2
        total += number
    return total % 10 == 0


def _luhn_digit(partial: str) -> str:
    for candidate in "0123456789":
        if _luhn(partial + candidate):
            return candidate
    return "0"


def _path_matches(selector: Sequence[Segment], steps: Sequence[Any]) -> bool:
    """Whether the node at ``steps`` (keys and indices from ``$``) is selected by ``selector``."""
    if not selector:
        return not steps
    head, rest = selector[0], selector[1:]
    if head[0] == "deep":
        return any(
            step == head[1] and _path_matches(rest, steps[index + 1 :]) for index, step in enumerate(steps)
        )
    if not steps:
        return False
    step = steps[0]
    if head[0] == "key":
        ok = isinstance(step, str) and step == head[1]
    elif head[0] == "index":
        ok = isinstance(step, int) and step == head[1]
    else:  # wild
        ok = True
    return ok and _path_matches(rest, steps[1:])


def redact_value(
    value: Any, key_names: Iterable[str] = DEFAULT_KEY_NAMES, json_paths: Iterable[str] = (), replacement: Any = DEFAULT_REPLACEMENT
) -> Any:
    """Redact one plain JSON value (``$`` is the value itself); the input is not modified."""
    return Redactor.build(key_names, json_paths, replacement).value(value)[0]


def redact_history(history: History, redactor: Redactor) -> tuple[History, int]:
    """A copy of ``history`` with its payloads, messages, unknown event fields and ids redacted (its
    engine's ``RAW_FIELDS`` left as they are), and how many values were replaced; the history's
    ``redacted`` list gains the JSON paths changed.

    Results stored by reference are read, redacted and, when changed, held inline again (saving puts
    them back in the blob store under their new hash).
    """
    session = redactor.session(raw=_RAW_TREES.get(history.workflow.engine or ""))

    def scrubbed_id(name: str, value: str) -> str:
        return value if not value or session.is_raw(("workflow", name)) else session.text(value)

    run_id = history.workflow.run_id
    workflow = dataclasses.replace(
        history.workflow,
        id=scrubbed_id("id", history.workflow.id),
        run_id=scrubbed_id("run_id", run_id) if run_id is not None else None,
    )
    if workflow.id != history.workflow.id:
        session.paths.append("$.workflow.id")
    if workflow.run_id != history.workflow.run_id:
        session.paths.append("$.workflow.run_id")
    new_events = []
    for index, event in enumerate(history.events):
        base = f"$.events[{index}]"
        original = history.event_result(event) if event.result_ref is not None else event.result
        result = session.scrub(original, f"{base}.result", steps=("events", index, "result"))
        changes: dict[str, Any] = {"error": _error(session, event.error, f"{base}.error", ("events", index, "error"))}
        if result != original:
            changes.update(result=result, result_ref=None)
        if event.extra:
            changes["extra"] = {
                key: session.scrub(item, join_path(base, key), redactor.key_matches(key), ("events", index, key))
                for key, item in event.extra.items()
            }
        new_events.append(dataclasses.replace(event, **changes))
    redacted = dataclasses.replace(
        history,
        workflow=workflow,
        input=session.scrub(history.input, "$.input", steps=("input",)),
        result=session.scrub(history.result, "$.result", steps=("result",)),
        error=_error(session, history.error, "$.error", ("error",)),
        events=tuple(new_events),
        redacted=tuple(sorted(set(history.redacted) | set(session.paths), key=_path_order)),
    )
    return redacted, len(session.paths)


def _path_order(path: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]


def _error(session: RedactionSession, error: ErrorInfo | None, path: str, steps: tuple[Any, ...]) -> ErrorInfo | None:
    if error is None:
        return None
    if session.selected(steps) or session.selected((*steps, "message")):
        message = session._literal_or(lambda: session.pseudonym(error.message))
    else:
        message = session.text(error.message)
    if message != error.message:
        session.paths.append(f"{path}.message")
    return ErrorInfo(type=error.type, message=message)


def redact_file(source: Path, target: Path, redactor: Redactor) -> int:
    """Load ``source``, redact it and save to ``target`` (may be the same path); returns the count.
    In place, the blobs that held values now redacted are removed as ``redact_file_report`` says."""
    return redact_file_report(source, target, redactor).replaced


@dataclass
class RedactedFile:
    """One file ``redact_file_report`` redacted: values replaced, and what became of the blobs that held
    the values before (``BlobRemoval``; empty unless redacted in place)."""

    replaced: int
    blobs: BlobRemoval = field(default_factory=BlobRemoval)


def redact_file_report(source: Path, target: Path, redactor: Redactor) -> RedactedFile:
    """Redact ``source`` into ``target``. In place (same file), no unredacted copy stays in the folder:
    a result rewritten goes to a blob under its new hash, and each blob the history stops naming is
    deleted unless another file of the folder tree still names it (then it is kept and listed). Order:
    the old hashes are noted in the store, the new blobs and the history are written (atomically), the
    old blobs are deleted last — a kill at any point loses no history, and the next ``redact`` in the
    folder deletes what an interrupted one left."""
    original = load_history(source)
    redacted, count = redact_history(original, redactor)
    in_place = Path(source).resolve() == Path(target).resolve()
    # The blobs of results redaction changed (held inline again until saving stores them anew).
    rewritten = {
        before.result_ref
        for before, after in zip(original.events, redacted.events)
        if before.result_ref is not None and after.result_ref is None
    }
    store = BlobStore.beside(target)
    if in_place:
        mark_for_removal(store, rewritten)
    saved = save_history(redacted, target)
    if not in_place:
        return RedactedFile(count)
    still_named = {event.result_ref for event in saved.events if event.result_ref is not None}
    return RedactedFile(count, remove_unreferenced(store, rewritten - still_named))
