"""The neutral history model (format ``replaytest-history``, version 1): ``History``, ``Event`` and parts.

These are plain frozen dataclasses holding JSON values; reading, validating and writing files lives in
``replaytest.history.io``, large results by reference in ``replaytest.history.blobs``. A result stored
by reference (``result_ref``) is read with ``History.event_result(event)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replaytest.history.blobs import BlobStore

FORMAT = "replaytest-history"
FORMAT_VERSION = 1

STATUSES: tuple[str, ...] = ("completed", "failed", "running", "parked")

EVENT_KINDS: tuple[str, ...] = (
    "step",  # an effectful call whose result is recorded
    "model",  # a model (LLM) call; records the prompt name and version
    "timer",  # a durable sleep; ``duration_s`` is the requested duration
    "signal",  # an external signal received; ``result`` is its payload
    "marker",  # a code-version marker, e.g. name "patched" with ``patch_id``
    "side-effect",  # a recorded nondeterministic value: name "now", "random" or "uuid"
    "child-workflow",  # a child run started by this one
    "continue-as-new",  # the run ended by starting a fresh run with new input
)


@dataclass(frozen=True)
class WorkflowInfo:
    """Which workflow the history belongs to. ``type`` is the name current code is looked up by."""

    type: str
    id: str
    run_id: str | None = None
    engine: str = "journal"
    # The engine's wire protocol the run was pinned to, where the engine has several (Restate's
    # ``pinned_service_protocol_version``); None: not recorded, the engine's default applies.
    protocol_version: int | None = None


@dataclass(frozen=True)
class PromptRef:
    """The prompt a model event was issued with: its name and full version (``replaytest.prompts``:
    the text version, plus the model and a digest of the parameters when the prompt declares them), and
    those parameters as recorded (None when not recorded), so a report can say what changed."""

    name: str
    version: str
    # Not compared: ``version`` carries their digest.
    params: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class ErrorInfo:
    """A recorded failure: the exception type's name and its message."""

    type: str
    message: str

    @classmethod
    def from_exception(cls, error: BaseException) -> ErrorInfo:
        return cls(type=type(error).__name__, message=str(error))


# Slots: a history holds one Event per recorded command (500,000 in a long run); without a __dict__
# each costs a fifth of the memory.
@dataclass(frozen=True, slots=True)
class Event:
    """One recorded command and its outcome.

    ``result`` holds the JSON result inline; a large result is stored by content hash instead and
    ``result_ref`` (``sha256:…``) names it — never both. ``None`` in ``result`` means a JSON null or no
    result (a timer, a failed step); the file omits the key in both cases. ``extra`` keeps fields this
    version does not know, so an importer's additions survive a load/save round trip.
    """

    seq: int
    kind: str
    name: str
    args_digest: str | None = None
    prompt: PromptRef | None = None
    idempotency_key: str | None = None
    result: Any = None
    result_ref: str | None = None
    error: ErrorInfo | None = None
    duration_s: float | None = None
    patch_id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


# What a parked run waits for next, as ``History.waiting`` records it.
WAIT_KINDS: tuple[str, ...] = ("signal", "timer")


@dataclass(frozen=True)
class Waiting:
    """The wait a parked run stands at: the command the engine holds as pending at the position after
    the last event (a ``signal`` wait or a ``timer``, by name). A resumed run must reach it before it
    issues anything new, or the engine finds the wait where the code now does something else.
    ``duration_s``: for a timer, the duration it was started with (the engine keeps it whatever the code now
    asks for); None when the engine does not say."""

    kind: str
    name: str
    duration_s: float | None = None


@dataclass(frozen=True)
class History:
    """One workflow run as recorded. ``blobs`` is where ``result_ref`` values resolve (set by the loader
    and by ``save_history``); it is not part of the recorded data and takes no part in equality."""

    workflow: WorkflowInfo
    status: str
    events: tuple[Event, ...] = ()
    input: Any = None
    result: Any = None
    error: ErrorInfo | None = None
    code_version: str | None = None
    prompt_versions: Mapping[str, str] = field(default_factory=dict)
    # Every prompt the workflow could use, with its version, as the run started (None: not recorded,
    # e.g. a history from before manifests existed).
    prompt_manifest: Mapping[str, str] | None = None
    format: str = FORMAT
    format_version: int = FORMAT_VERSION
    # JSON paths (``$.input.customer.email``) whose values ``replaytest redact`` or an importer replaced
    # with pseudonyms; empty for a history nobody redacted. Reports name them when such a history diverges.
    redacted: tuple[str, ...] = ()
    # Parked runs only: the wait the run stands at (None: not recorded, e.g. a history from before it was).
    waiting: Waiting | None = None
    # An engine's description of the run beyond its events, for engines whose runs are not a command
    # sequence (LangGraph graph threads: super-steps' nodes, parked nodes, state channels; see the LangGraph
    # section of docs/design.md). None for every other history.
    graph: Mapping[str, Any] | None = None
    # LangGraph functional-API threads only: the graph runs the entrypoint's own code started, as the import
    # found them in the thread's checkpoint namespaces ((nested run number, namespace), in number order; empty:
    # the import read the namespaces and found none). None: the import did not read them (a history from
    # before it did, or a saver replaytest does not read with SQL).
    nested_namespaces: tuple[tuple[int, str], ...] | None = None
    source: Path | None = field(default=None, compare=False, repr=False)
    blobs: BlobStore | None = field(default=None, compare=False, repr=False)

    def event_result(self, event: Event) -> Any:
        """The event's result, read from the blob store when it is stored by reference."""
        if event.result_ref is None:
            return event.result
        if self.blobs is None:
            from replaytest.history.errors import HistoryError

            raise HistoryError(
                self.source, f"$.events[{event.seq - 1}].result_ref", "result stored by reference but no blob store is known"
            )
        return self.blobs.read_json(event.result_ref, self.source, f"$.events[{event.seq - 1}].result_ref")
