"""Framework plugin for langgraph: what replaytest knows about it (filled in by the lint profile and replayer work)."""

from replaytest.plugins import FrameworkPlugin

PLUGIN = FrameworkPlugin(name="langgraph")
