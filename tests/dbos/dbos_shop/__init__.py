"""A small DBOS application replayed by the DBOS tests (recorded for real by ``record.py``)."""
