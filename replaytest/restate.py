"""What a Restate project imports from replaytest: the replayer, for scripts that replay
(``RestateReplayer``). Configuration needs nothing from here: ``replay_workflows`` names the application's
own code as it is served (the ASGI app ``restate.app(...)`` returns, an ``Endpoint``, the services, a module,
a list).

The name loads on first use from ``replaytest.plugins.restate.replayer``, whose path keeps working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from replaytest.plugins.reexport import lazy_attributes

if TYPE_CHECKING:
    from replaytest.plugins.restate.replayer import RestateReplayer

__all__ = ["RestateReplayer"]

__getattr__ = lazy_attributes(__name__, {"RestateReplayer": "replaytest.plugins.restate.replayer"})
