"""A small order desk served to a real Restate server by the Restate tests (see ``orders.py``)."""
