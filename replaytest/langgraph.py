"""What a LangGraph application imports from replaytest: the saver importers (``histories_from_saver`` for a
checkpoint saver object, ``ahistories_from_saver`` for an async one), the prompt-version helpers
(``use_prompt``, ``with_prompts``; taking either registers the per-call recorder, as importing
``replaytest.plugins.langgraph.prompts`` does) and the replayer, for scripts that replay
(``LangGraphReplayer``).

Each name loads on first use from where it is defined under ``replaytest.plugins.langgraph``, whose paths
keep working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from replaytest.plugins.reexport import lazy_attributes

if TYPE_CHECKING:
    from replaytest.plugins.langgraph.async_savers import ahistories_from_saver
    from replaytest.plugins.langgraph.importer import histories_from_saver
    from replaytest.plugins.langgraph.prompts import use_prompt, with_prompts
    from replaytest.plugins.langgraph.replayer import LangGraphReplayer

__all__ = ["LangGraphReplayer", "ahistories_from_saver", "histories_from_saver", "use_prompt", "with_prompts"]

__getattr__ = lazy_attributes(__name__, {
    "histories_from_saver": "replaytest.plugins.langgraph.importer",
    "ahistories_from_saver": "replaytest.plugins.langgraph.async_savers",
    "use_prompt": "replaytest.plugins.langgraph.prompts",
    "with_prompts": "replaytest.plugins.langgraph.prompts",
    "LangGraphReplayer": "replaytest.plugins.langgraph.replayer",
})
