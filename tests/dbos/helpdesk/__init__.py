"""A support-desk agent on DBOS: triage a ticket, escalate it with rules only the step body imports."""
