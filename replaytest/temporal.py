"""What a Temporal application imports from replaytest: the replay configuration (``TemporalReplayConfig``,
for workers with a custom data converter, interceptors or plugins), the prompt-version helpers
(``PromptInterceptor``, ``use_prompt``; workflow code imports them inside
``workflow.unsafe.imports_passed_through()``) and the replayer, for scripts that replay
(``TemporalReplayer``).

Each name loads on first use from where it is defined under ``replaytest.plugins.temporal``, whose paths
keep working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from replaytest.plugins.reexport import lazy_attributes

if TYPE_CHECKING:
    from replaytest.plugins.temporal.prompts import PromptInterceptor, use_prompt
    from replaytest.plugins.temporal.replayer import TemporalReplayConfig, TemporalReplayer

__all__ = ["PromptInterceptor", "TemporalReplayConfig", "TemporalReplayer", "use_prompt"]

__getattr__ = lazy_attributes(__name__, {
    "TemporalReplayConfig": "replaytest.plugins.temporal.replayer",
    "TemporalReplayer": "replaytest.plugins.temporal.replayer",
    "PromptInterceptor": "replaytest.plugins.temporal.prompts",
    "use_prompt": "replaytest.plugins.temporal.prompts",
})
