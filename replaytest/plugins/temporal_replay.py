"""Deprecated: the old path of ``TemporalReplayConfig``, which moved to ``replaytest.temporal`` (defined in
``replaytest.plugins.temporal.replayer``). Kept for one release so configurations that name it keep working;
taking the name warns with a ``DeprecationWarning`` naming the new path."""

from __future__ import annotations

from replaytest.plugins.reexport import lazy_attributes

__getattr__ = lazy_attributes(__name__, {"TemporalReplayConfig": "replaytest.plugins.temporal.replayer"}, moved_to="replaytest.temporal")
