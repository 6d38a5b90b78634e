"""Canonical argument digests: equal arguments, equal digest; documented encodings; refusals."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replaytest.history import DigestError, args_digest, canonical_json


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Order:
    id: int
    tags: frozenset


def test_digest_is_independent_of_key_order_and_tuple_vs_list() -> None:
    assert args_digest((1, {"b": 2, "a": 1}), {"y": 1, "x": 2}) == args_digest([1, {"a": 1, "b": 2}], {"x": 2, "y": 1})
    assert args_digest((1,)) != args_digest((1.5,))
    assert args_digest().startswith("sha256:") and len(args_digest()) == 71


def test_tagged_encodings_are_documented_forms() -> None:
    value = [Color.RED, b"\x01", float("nan"), {1: "a"}, datetime.date(2026, 1, 2), Order(7, frozenset({"b", "a"}))]
    assert canonical_json(value) == (
        '["red",{"$bytes":"01"},{"$float":"nan"},{"$dict":[[1,"a"]]},{"$date":"2026-01-02"},'
        '{"$dataclass":"test_history_digest.Order","fields":{"id":7,"tags":{"$set":["a","b"]}}}]'
    )


def test_set_digest_is_stable_across_hash_seeds() -> None:
    code = "from replaytest.history import args_digest; print(args_digest(({'x', 'y', 'z', 'w'},)))"
    digests = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONHASHSEED": seed}, check=True).stdout
        for seed in ("1", "2", "3")
    }
    assert len(digests) == 1


def test_objects_without_a_canonical_form_are_refused() -> None:
    with pytest.raises(DigestError, match="cannot digest a builtins.object"):
        args_digest((object(),))


@given(
    st.lists(st.one_of(st.none(), st.booleans(), st.integers(), st.text()), max_size=6),
    st.dictionaries(st.text(), st.one_of(st.none(), st.booleans(), st.integers(), st.text()), max_size=4),
)
def test_flat_scalar_fast_path_gives_the_general_digest(args: list, kwargs: dict) -> None:
    from replaytest.history.digest import sha256_text

    general = sha256_text(canonical_json({"args": list(args), "kwargs": dict(kwargs)}))
    assert args_digest(args, kwargs) == general
    assert args_digest(tuple(args), kwargs) == general
