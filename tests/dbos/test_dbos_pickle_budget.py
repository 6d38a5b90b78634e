"""The restricted decoder under hostile pickles written by hand: work and size are bounded by the decode
budget before they are spent, nothing a payload does outlives it, and every failure is a refusal."""

from __future__ import annotations

import base64
import collections
import pickle
import struct
import subprocess
import sys
import textwrap

import pytest

from replaytest.plugins.dbos.values import BudgetMeter, DecodeBudget, OverBudget, PickleRefused, decode_pickle


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def long1(value: int) -> bytes:
    """pickle's LONG1/LONG4 opcodes: a little-endian two's-complement integer after its length."""
    data = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(data)]) + data if len(data) < 256 else b"\x8b" + struct.pack("<i", len(data)) + data


# bytes(2**34): 16 GiB from a pickle of 30 bytes
HUGE_BYTES = b"\x80\x04cbuiltins\nbytes\n" + long1(2**34) + b"\x85R."
# list(range(2**40))
HUGE_RANGE = b"\x80\x04cbuiltins\nlist\ncbuiltins\nrange\n" + long1(2**40) + b"\x85R\x85R."
# a list holding one list twice, that one holding the next twice, 40 levels: 2**40 leaves through the memo
SHARED = b"\x80\x04]\x940" + b"".join(b"(h" + bytes([i]) + b"h" + bytes([i]) + b"l\x940" for i in range(40)) + b"h\x28."
# BUILD with slot state on the Counter class itself: Counter.update = set would leave every later Counter empty
COUNTER_TAMPER = b"\x80\x04ccollections\nCounter\nN}(X\x06\x00\x00\x00updatecbuiltins\nset\nu\x86b."
CYCLE = b"\x80\x04]\x94h\x00a."  # a list appended to itself
DEEP = b"\x80\x04" + b"]" * 100_000 + b"a" * 99_999 + b"."  # 100,000 nested lists


def test_a_huge_bytes_length_is_refused_before_allocation_in_a_child_limited_to_512_mib() -> None:
    script = textwrap.dedent(
        f"""
        import base64, resource
        resource.setrlimit(resource.RLIMIT_AS, (512 * 1024 * 1024, 512 * 1024 * 1024))
        from replaytest.plugins.dbos.values import OverBudget, decode_pickle
        try:
            decode_pickle({b64(HUGE_BYTES)!r})
        except OverBudget as refused:
            print(refused.budget, refused.reason)
        """
    )
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "max_bytes over the decode budget of 33,554,432 bytes of typed JSON per run"


def test_a_huge_range_is_refused_before_it_is_expanded() -> None:
    meter = BudgetMeter()
    with pytest.raises(OverBudget) as refused:
        decode_pickle(b64(HUGE_RANGE), meter)
    assert refused.value.budget == "max_nodes"
    assert refused.value.reason == (
        "over the decode budget of 1,000,000 values per run (a value shared through the pickle memo counts each time it is written)"
    )
    assert meter.nodes <= 2  # the list and its range argument: not one element was made


def test_values_shared_through_the_memo_count_each_time_they_are_written() -> None:
    meter = BudgetMeter(DecodeBudget(max_nodes=10_000))
    with pytest.raises(OverBudget) as refused:
        decode_pickle(b64(SHARED), meter)
    assert refused.value.budget == "max_nodes"
    assert meter.nodes == 10_000  # the work done is the budget, not 2**41 nodes


def test_a_payload_cannot_change_an_allowed_class_for_later_payloads() -> None:
    before = dict(vars(collections.Counter))
    with pytest.raises(PickleRefused) as refused:
        decode_pickle(b64(COUNTER_TAMPER))
    assert str(refused.value) == "payload: BUILD gives state to collections.Counter, not to an object the pickle built"
    assert dict(vars(collections.Counter)) == before
    later = decode_pickle(b64(pickle.dumps(collections.Counter({"refund": 2, "invoice": 1}))))
    assert later == {"$type": "collections.Counter", "items": [["refund", 2], ["invoice", 1]]}


def test_state_given_to_a_built_allowlisted_value_is_refused_not_applied() -> None:
    # Counter({}) then BUILD (None, {"update": set}): state for an instance of an allowed type
    raw = b"\x80\x04ccollections\nCounter\n}\x85RN}(X\x06\x00\x00\x00updatecbuiltins\nset\nu\x86b."
    with pytest.raises(PickleRefused) as refused:
        decode_pickle(b64(raw))
    assert str(refused.value) == "collections.Counter: instance state (BUILD) on this type is not decoded"


def test_a_cycle_is_refused() -> None:
    with pytest.raises(PickleRefused) as refused:
        decode_pickle(b64(CYCLE))
    assert str(refused.value) == "payload: a value that contains itself (a cycle cannot be written as JSON)"


def test_deep_nesting_is_refused_at_the_depth_budget_without_recursion_errors() -> None:
    meter = BudgetMeter()
    with pytest.raises(OverBudget) as refused:
        decode_pickle(b64(DEEP), meter)
    assert (refused.value.budget, refused.value.reason) == ("max_depth", "nested deeper than the decode budget of 100 levels")
    assert meter.nodes == 102  # the writer stopped at the limit: the root, 100 levels, the one over


def test_the_budget_is_shared_by_the_payloads_of_one_run() -> None:
    meter = BudgetMeter(DecodeBudget(max_bytes=3_000))
    text = b64(pickle.dumps({"reply": "x" * 1_000}))
    decode_pickle(text, meter)
    decode_pickle(text, meter)
    with pytest.raises(OverBudget) as refused:
        decode_pickle(text, meter)
    assert refused.value.reason == "over the decode budget of 3,000 bytes of typed JSON per run"


def test_a_pickle_larger_than_the_byte_budget_is_refused_before_it_is_decoded() -> None:
    with pytest.raises(OverBudget) as refused:
        decode_pickle("A" * 8_000, BudgetMeter(DecodeBudget(max_bytes=1_000)))
    assert refused.value.reason == "a pickle larger than the decode budget of 1,000 bytes"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\x80\x04cbuiltins\nbytes\n\x8a\x01\xff\x85R.", "builtins.bytes: a length must be a non-negative integer"),
        (b"\x80\x04h\x07.", "payload: malformed pickle: memo entry 7 is read before it is written"),
        (b"\x80\x04NN.", "payload: malformed pickle: STOP at byte 4 with an unbalanced stack"),
        (b"\x80\x04ccollections\nCounter\n]\x85R.", "collections.Counter: built from a list, which the decoder does not expand"),
        (b"\x80\x04X\x01\x00\x00\x00\xed" + b".", "payload: not a pickle the decoder can read"),
        (b"\x80\x04" + long1(1 << 20000) + b".", "int: an integer of 20,001 bits, too long to write as JSON"),
        (b"\x80\x04c_codecs\nencode\nX\x01\x00\x00\x00a]\x86R.", "_codecs.encode: only text with the latin1 encoding"),
        (b"\x80\x04cbuiltins\nbytes\nX\x01\x00\x00\x00a]\x86R.", "builtins.bytes: arguments the decoder does not accept"),
    ],
    ids=["negative-length", "unset-memo", "two-values", "counter-from-list", "bad-utf8", "long-int", "list-encoding", "bytes-list-encoding"],
)
def test_malformed_pickles_are_refused_with_what_is_wrong(raw: bytes, message: str) -> None:
    with pytest.raises(PickleRefused) as refused:
        decode_pickle(b64(raw))
    assert str(refused.value).startswith(message)


def test_a_lone_surrogate_is_refused() -> None:
    raw = b"\x80\x04X\x03\x00\x00\x00\xed\xa0\x80."  # BINUNICODE of U+D800, as pickle writes it (surrogatepass)
    with pytest.raises(PickleRefused) as refused:
        decode_pickle(b64(raw))
    assert str(refused.value) == "str: a string with a lone surrogate, which is not text a history can hold"


def test_an_integer_length_prefix_is_never_trusted() -> None:
    # BINBYTES8 announcing 2**60 bytes, followed by three: refused as truncated, nothing allocated
    raw = b"\x80\x04\x8e" + struct.pack("<Q", 2**60) + b"abc."
    with pytest.raises(PickleRefused, match="not a pickle the decoder can read"):
        decode_pickle(b64(raw))


def test_a_huge_memo_index_costs_one_entry() -> None:
    # LONG_BINPUT 2**28-1: a memo kept as an array would grow to 2 GiB of pointers
    assert decode_pickle(b64(b"\x80\x04Nr\xff\xff\xff\x0f.")) is None


def test_memo_shared_constructor_arguments_are_counted_too() -> None:
    # Decimal((0, T, 0)) where T holds the next tuple twice, 40 levels: 2**40 digits through the memo
    tree = b")\x940" + b"".join(b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86\x940" for i in range(40)) + b"h\x28"
    raw = b"\x80\x04cdecimal\nDecimal\nK\x00" + tree + b"K\x00\x87\x85R."
    meter = BudgetMeter(DecodeBudget(max_nodes=5_000))
    with pytest.raises(OverBudget):
        decode_pickle(b64(raw), meter)
    assert meter.nodes == 5_000


def test_a_raised_depth_budget_is_followed_to_its_end() -> None:
    raw = b"\x80\x04" + b"]" * 380 + b"a" * 379 + b"."
    typed = decode_pickle(b64(raw), BudgetMeter(DecodeBudget(max_depth=390)))
    depth = 0
    while typed:
        typed, depth = typed[0], depth + 1
    assert depth == 379


def test_what_the_reader_holds_is_bounded_by_the_value_budget() -> None:
    # 2,000,000 empty lists pushed and never written: the stack, not the output, would grow
    with pytest.raises(OverBudget) as refused:
        decode_pickle(b64(b"\x80\x04" + b"]" * 2_000_000 + b"."))
    assert refused.value.reason == "a pickle that pushes or memoizes more than the decode budget of 1,000,000 values"
    with pytest.raises(OverBudget):
        decode_pickle(b64(b"\x80\x04N" + b"\x94" * 20 + b"."), BudgetMeter(DecodeBudget(max_nodes=10)))
