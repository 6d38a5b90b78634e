"""What a DBOS application imports from replaytest: the replay configuration (``DBOSReplayConfig``, named by
``replay_workflows`` when importing the workflows needs offline datasources), the prompt-version helpers
(``use_prompt``, ``with_prompts``; taking either starts recording each step's prompt versions, as importing
``replaytest.plugins.dbos.prompts`` does) and the replayer, for scripts that replay (``DBOSReplayer``).

Each name loads on first use from where it is defined under ``replaytest.plugins.dbos``, whose paths keep
working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from replaytest.plugins.reexport import lazy_attributes

if TYPE_CHECKING:
    from replaytest.plugins.dbos.prompts import use_prompt, with_prompts
    from replaytest.plugins.dbos.replayer import DBOSReplayConfig, DBOSReplayer

__all__ = ["DBOSReplayConfig", "DBOSReplayer", "use_prompt", "with_prompts"]

__getattr__ = lazy_attributes(__name__, {
    "DBOSReplayConfig": "replaytest.plugins.dbos.replayer",
    "DBOSReplayer": "replaytest.plugins.dbos.replayer",
    "use_prompt": "replaytest.plugins.dbos.prompts",
    "with_prompts": "replaytest.plugins.dbos.prompts",
})
