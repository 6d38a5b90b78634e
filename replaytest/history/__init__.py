"""The neutral history format (``replaytest-history`` version 1): model, validating loader and writer,
blob store for large results, argument digests and redaction. Imports nothing else of replaytest."""

from replaytest.history.blobs import BLOB_THRESHOLD, BlobStore
from replaytest.history.digest import DigestError, args_digest, canonical_json, sha256_text
from replaytest.history.errors import HistoryError
from replaytest.history.io import dumps_history, history_from_dict, history_to_dict, load_history, save_history
from replaytest.history.model import (
    EVENT_KINDS,
    FORMAT,
    FORMAT_VERSION,
    STATUSES,
    ErrorInfo,
    Event,
    History,
    PromptRef,
    Waiting,
    WorkflowInfo,
)
from replaytest.history.redact import (
    DEFAULT_KEY_NAMES,
    RedactError,
    Redactor,
    redact_file,
    redact_history,
    redact_value,
)

__all__ = [
    "BLOB_THRESHOLD",
    "DEFAULT_KEY_NAMES",
    "EVENT_KINDS",
    "FORMAT",
    "FORMAT_VERSION",
    "STATUSES",
    "BlobStore",
    "DigestError",
    "ErrorInfo",
    "Event",
    "History",
    "HistoryError",
    "PromptRef",
    "RedactError",
    "Redactor",
    "Waiting",
    "WorkflowInfo",
    "args_digest",
    "canonical_json",
    "dumps_history",
    "history_from_dict",
    "history_to_dict",
    "load_history",
    "redact_file",
    "redact_history",
    "redact_value",
    "save_history",
    "sha256_text",
]
