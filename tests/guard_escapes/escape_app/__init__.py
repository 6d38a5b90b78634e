"""One workflow per engine (journal, DBOS, LangGraph) that, when ``ESCAPES_ACTIVE=1``, performs one of
the effects that once got past the replay guards — chosen by the run's input — between two steps."""
