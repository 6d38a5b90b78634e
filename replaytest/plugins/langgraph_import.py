"""Deprecated: the old path of ``histories_from_saver``, which moved to ``replaytest.langgraph`` (defined in
``replaytest.plugins.langgraph.importer``). Kept for one release so configurations that name it keep working;
taking the name warns with a ``DeprecationWarning`` naming the new path."""

from __future__ import annotations

from replaytest.plugins.reexport import lazy_attributes

__getattr__ = lazy_attributes(__name__, {"histories_from_saver": "replaytest.plugins.langgraph.importer"}, moved_to="replaytest.langgraph")
