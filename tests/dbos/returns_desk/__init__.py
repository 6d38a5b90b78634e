"""A returns desk on DBOS: price the returned item, decide the refund, issue a credit note."""
