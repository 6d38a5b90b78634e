"""Deprecated: the old path of ``DBOSReplayConfig``, which moved to ``replaytest.dbos`` (defined in
``replaytest.plugins.dbos.replayer``). Kept for one release so configurations that name it keep working;
taking the name warns with a ``DeprecationWarning`` naming the new path."""

from __future__ import annotations

from replaytest.plugins.reexport import lazy_attributes

__getattr__ = lazy_attributes(__name__, {"DBOSReplayConfig": "replaytest.plugins.dbos.replayer"}, moved_to="replaytest.dbos")
