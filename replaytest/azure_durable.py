"""What an Azure Durable Functions project imports from replaytest: the replayer, for scripts that replay
(``AzureDurableReplayer``). Configuration needs nothing from here: ``replay_workflows`` names the
application's ``DFApp`` or blueprints.

The name loads on first use from ``replaytest.plugins.azure_durable.replayer``, whose path keeps working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from replaytest.plugins.reexport import lazy_attributes

if TYPE_CHECKING:
    from replaytest.plugins.azure_durable.replayer import AzureDurableReplayer

__all__ = ["AzureDurableReplayer"]

__getattr__ = lazy_attributes(__name__, {"AzureDurableReplayer": "replaytest.plugins.azure_durable.replayer"})
