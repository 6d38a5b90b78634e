"""The DBOS invoice-dispute desk of the deploy-impact scenario (``app``)."""
