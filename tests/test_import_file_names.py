"""The file names every importer gives its histories (``plugins/import_files.py``): safe ids kept, any
other id hashed, no hidden file, no name past file-system limits."""

from __future__ import annotations

import hashlib

from replaytest.plugins.import_files import history_file_name


def _digest(*ids: str) -> str:
    """The documented suffix: 12 hex digits of the SHA-256 of the exact ids joined by NUL."""
    return hashlib.sha256("\0".join(ids).encode()).hexdigest()[:12]


def test_safe_ids_are_kept_and_others_get_a_hash_of_the_exact_ids() -> None:
    assert history_file_name("order-1.v2_a") == "order-1.v2_a.json"
    assert history_file_name("order/1") == "order_1-f2d593139ad7.json"
    assert history_file_name("order:1") == "order_1-c8bd69874287.json"
    assert history_file_name("place_order", "order 1", separator="-") == f"place_order-order_1-{_digest('place_order', 'order 1')}.json"


def test_no_id_becomes_a_hidden_or_empty_name() -> None:
    assert history_file_name("..") == f"{_digest('..')}.json"
    assert history_file_name(".env") == f"env-{_digest('.env')}.json"
    assert history_file_name("") == f"{_digest('')}.json"


def test_a_long_id_is_cut_and_hashed() -> None:
    long_id = "tenant-" + "x" * 300
    name = history_file_name(long_id)
    assert name == f"{long_id[:160]}-{_digest(long_id)}.json"
    assert len(name.encode()) <= 255
    assert history_file_name(long_id + "y") != name  # ids that differ past the cut still differ
