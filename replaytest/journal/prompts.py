"""``Prompt``: a named prompt template whose version is the SHA-256 of its text.

Model events record the prompt's name and version, so a replay can tell that a prompt changed since
the history was recorded (prompt drift) even when the code calling it did not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replaytest.history.digest import sha256_text
from replaytest.history.model import PromptRef


@dataclass(frozen=True)
class Prompt:
    name: str
    template: str
    version: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "version", sha256_text(self.template))

    def render(self, **values: Any) -> str:
        """The template with ``{placeholders}`` filled (``str.format`` syntax)."""
        return self.template.format(**values)

    @property
    def ref(self) -> PromptRef:
        return PromptRef(name=self.name, version=self.version)
