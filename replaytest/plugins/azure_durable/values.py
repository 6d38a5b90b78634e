"""The JSON payload codec of Azure Durable Functions histories: ``decode_payload`` and ``encode_payload``.

Durable Functions keeps every payload (orchestration input and output, activity inputs and results,
external-event data) as JSON text in a string column or field. Importing parses that text strictly
(``history.strict_json``: no NaN, no duplicate keys) into the JSON value the neutral history stores;
replay writes the value back as JSON text for the SDK, which decodes it itself. Nothing is ever
unpickled or evaluated: text that is not JSON is a ``PayloadError`` naming where it was found.
"""

from __future__ import annotations

import json
from typing import Any

from replaytest.history.strict_json import StrictJSONError, loads_strict


class PayloadError(ValueError):
    """A payload that is not JSON text; the message names its place (file or table row, and field)."""


def decode_payload(text: Any, where: str) -> Any:
    """The JSON value of a payload column/field (None when it is absent or empty)."""
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise PayloadError(f"{where}: a payload must be JSON text, found {type(text).__name__}")
    try:
        return loads_strict(text)
    except StrictJSONError as error:
        at = f" at {error.json_path}" if error.json_path else ""
        raise PayloadError(f"{where}: the payload is not JSON{at}: {error.message}") from None
    except RecursionError:
        raise PayloadError(f"{where}: the payload is nested too deeply") from None


def encode_payload(value: Any) -> str | None:
    """A JSON value as the text Durable Functions stores (None stays absent)."""
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
