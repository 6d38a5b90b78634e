"""Deprecated: the old path of ``PromptInterceptor`` and ``use_prompt``, which moved to ``replaytest.temporal``
(defined in ``replaytest.plugins.temporal.prompts``). Kept for one release so workflow code that imports
them keeps working; taking a name warns with a ``DeprecationWarning`` naming the new path."""

from __future__ import annotations

from replaytest.plugins.reexport import lazy_attributes

__getattr__ = lazy_attributes(
    __name__,
    {"PromptInterceptor": "replaytest.plugins.temporal.prompts", "use_prompt": "replaytest.plugins.temporal.prompts"},
    moved_to="replaytest.temporal",
)
