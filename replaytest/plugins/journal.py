"""Framework plugin for journal: what replaytest knows about it (filled in by the lint profile and replayer work)."""

from replaytest.plugins import FrameworkPlugin
from replaytest.replay.journal_replayer import JournalReplayer

PLUGIN = FrameworkPlugin(name="journal", replayer=JournalReplayer())
