"""DBOS payloads as data: a restricted pickle decoder, the typed JSON it writes, and rebuilding values.

DBOS stores step results, workflow inputs and outputs either as portable JSON or (its default) as
base64 pickle. A written history never holds pickle, so the importer turns pickle into *typed JSON*:

* JSON values stay as they are; a dict whose keys are not all strings, or that has a ``"$type"`` key of
  its own, becomes ``{"$type": "dict", "items": [[key, value], ...]}``;
* ``tuple``/``set``/``frozenset``/``bytes``/``bytearray``/``complex``/non-finite floats, ``datetime``
  types, ``Decimal``, ``UUID`` and the ``collections`` containers become ``{"$type": NAME, ...}``;
* instances of any other class become inert data: ``{"$type": "object", "class": "module.Name",
  "new_args": [...], "call_args": [...], "state": ..., "list_items": [...], "dict_items": [...]}`` —
  what pickle would have done to rebuild it, recorded rather than done.

``decode_pickle`` never executes the pickle: ``pickletools.genops`` parses its opcodes and ``_Machine``
runs them on inert nodes (a global is a name, a call or ``__new__`` a record, BUILD and SETITEM(S)
recorded on the record), one step per opcode; ``_Writer`` then writes the nodes as typed JSON, calling
only constructors of small values from the allowlist below (numbers, text, bytes, dates, ``Decimal``,
``UUID``) after checking their arguments. Nothing is imported, no class is handed to the payload, and
nothing outlives one payload. The run's ``BudgetMeter`` bounds what is written (``DecodeBudget``: bytes,
values - a value shared through the memo counts each time it is written - and depth); passing it is
``OverBudget``. Refused (``PickleRefused``, naming the type): standard-library names outside the
allowlist (``os.system``, ``pathlib.PosixPath``, ``fractions.Fraction``), calls of names that are not
classes by convention (a lower-case callable, e.g. ``numpy.core.multiarray._reconstruct``), state given
to a class or to a value of an allowlisted type, cycles, persistent ids, extension codes, out-of-band
buffers and malformed pickles.

``Rebuilder`` (one per replayed history) turns typed JSON back into Python values. A class named by an
``"object"`` entry is rebuilt only when the current code has already imported its module
(``recorded_classes``): a history never makes replay import a module. Only classes outside the standard
library are rebuilt, an instance by ``cls.__new__`` plus its recorded state (as pickle does), and a
recorded call only for exceptions and enums. An object whose module is not imported reaches the code as
plain data (its recorded state as a dict), an exception as a stand-in ``Exception`` of the same name;
``Rebuilder.note`` names those classes for the replay result. Anything else is a ``RebuildError`` naming
the type.
"""

from __future__ import annotations

import _compat_pickle
import base64
import binascii
import codecs
import collections
import datetime
import decimal
import math
import pickletools
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

TYPE_KEY = "$type"

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins", "copyreg", "__builtin__"}

# The real types pickle may rebuild while decoding: plain values and containers whose construction
# runs no user code. Exceptions of ``builtins`` are added below.
_ALLOWED: dict[tuple[str, str], Any] = {
    ("builtins", name): getattr(__import__("builtins"), name)
    for name in (
        "set", "frozenset", "list", "dict", "tuple", "bytes", "bytearray", "complex", "int", "float", "str",
        "bool", "slice", "range", "object", "NotImplemented", "Ellipsis",
    )
}  # fmt: skip
_ALLOWED.update(
    {
        ("datetime", "datetime"): datetime.datetime,
        ("datetime", "date"): datetime.date,
        ("datetime", "time"): datetime.time,
        ("datetime", "timedelta"): datetime.timedelta,
        ("datetime", "timezone"): datetime.timezone,
        ("decimal", "Decimal"): decimal.Decimal,
        ("uuid", "UUID"): uuid.UUID,
        ("uuid", "SafeUUID"): uuid.SafeUUID,
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("collections", "defaultdict"): collections.defaultdict,
        ("collections", "deque"): collections.deque,
        ("collections", "Counter"): collections.Counter,
        ("_codecs", "encode"): codecs.encode,  # how protocols 0-2 write bytes: encode(text, "latin1")
    }
)
for _name in dir(__import__("builtins")):
    _value = getattr(__import__("builtins"), _name)
    if isinstance(_value, type) and issubclass(_value, BaseException):
        _ALLOWED[("builtins", _name)] = _value


class PickleRefused(Exception):
    """A pickled payload the restricted decoder will not turn into data (``type_name`` says what)."""

    def __init__(self, type_name: str, reason: str) -> None:
        self.type_name = type_name
        self.reason = reason
        super().__init__(f"{type_name}: {reason}")


class OverBudget(PickleRefused):
    """Decoding would spend more than the ``DecodeBudget`` allows (``budget`` names the limit)."""

    def __init__(self, budget: str, reason: str) -> None:
        self.budget = budget
        super().__init__("payload", reason)


class RebuildError(Exception):
    """A recorded value whose type the current code cannot rebuild."""


@dataclass(frozen=True)
class DecodeBudget:
    """What decoding the payloads of one run may spend: ``max_bytes`` of typed JSON (strings and digits as
    written, bytes as base64; also the most one pickle may be), ``max_nodes`` values written (a value the
    pickle shares through its memo counts every time it is written out; also the most values one pickle
    may push or memoize while it is read) and ``max_depth`` levels of JSON nesting in one payload."""

    max_bytes: int = 32 * 1024 * 1024
    max_nodes: int = 1_000_000
    max_depth: int = 100


class BudgetMeter:
    """What one run's payloads have spent of a ``DecodeBudget`` so far; refuses before the limit is passed."""

    def __init__(self, budget: DecodeBudget | None = None) -> None:
        self.budget = budget or DecodeBudget()
        self.bytes = 0
        self.nodes = 0

    def spend_bytes(self, count: int) -> None:
        self.require_bytes(count)
        self.bytes += count

    def spend_nodes(self, count: int = 1) -> None:
        self.require_nodes(count)
        self.nodes += count

    def require_bytes(self, count: int) -> None:
        """Refuse what would pass the byte budget, before anything is allocated for it."""
        if self.bytes + count > self.budget.max_bytes:
            raise OverBudget("max_bytes", f"over the decode budget of {self.budget.max_bytes:,} bytes of typed JSON per run")

    def require_nodes(self, count: int) -> None:
        """Refuse what would pass the value budget, before anything is expanded for it."""
        if self.nodes + count > self.budget.max_nodes:
            raise OverBudget(
                "max_nodes",
                f"over the decode budget of {self.budget.max_nodes:,} values per run "
                "(a value shared through the pickle memo counts each time it is written)",
            )

    def check_depth(self, depth: int) -> None:
        if depth > self.budget.max_depth:
            raise OverBudget("max_depth", f"nested deeper than the decode budget of {self.budget.max_depth} levels")


# --- reading pickle opcodes into inert nodes -----------------------------------------------------------
#
# The pickle is never executed: ``pickletools.genops`` parses its opcodes and ``_Machine`` runs them on
# inert nodes. A global is a name (``_Global``), a call or ``cls.__new__`` a record (``_Built``), a dict a
# list of pairs (keys need not be hashable), a set a list of items. Nothing is constructed, called or
# assigned to while reading, so no payload can reach a class or anything else outside itself; the work is
# one step per opcode. ``_Writer`` then turns the nodes into typed JSON under the budget.


class _Global:
    """A class or function a pickle names: the real object when allowlisted, otherwise only its name."""

    __slots__ = ("qualified", "real")

    def __init__(self, qualified: str, real: Any) -> None:
        self.qualified = qualified
        self.real = real  # _NOT_ALLOWED for names outside the allowlist

    @property
    def allowed(self) -> bool:
        return self.real is not _NOT_ALLOWED

    @property
    def callable_by_convention(self) -> bool:
        # By convention only classes are capitalised; a function call cannot be recorded as data the
        # replayer could redo safely, so a lower-case name outside the allowlist is never "called".
        return self.allowed or self.qualified == _RECONSTRUCTOR or self.qualified.rpartition(".")[2][:1].isupper()


_NOT_ALLOWED = object()
_RECONSTRUCTOR = "copyreg._reconstructor"


class _Built:
    """What pickle asked of a global (REDUCE/INST/OBJ: ``call``; NEWOBJ: ``new``), with the state BUILD
    gave it and the items APPEND(S)/SETITEM(S) added, all recorded rather than done."""

    __slots__ = ("callee", "how", "args", "state", "list_items", "dict_items")

    def __init__(self, callee: _Global, how: str, args: tuple[Any, ...]) -> None:
        self.callee = callee
        self.how = how
        self.args = args
        self.state: Any = None
        self.list_items: list[Any] | None = None
        self.dict_items: list[tuple[Any, Any]] | None = None


class _Dict:
    __slots__ = ("pairs",)

    def __init__(self) -> None:
        self.pairs: list[tuple[Any, Any]] = []


class _Set:
    __slots__ = ("frozen", "items")

    def __init__(self, frozen: bool, items: list[Any]) -> None:
        self.frozen = frozen
        self.items = items


_MARK = object()


def _resolve_global(module: str, name: str) -> _Global:
    """The node for a global; ``PickleRefused`` for standard-library names outside the allowlist."""
    # Protocols 0-2 spell Python 2 names (``__builtin__.set``); pickle maps them the same way.
    module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
    module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    qualified = f"{module}.{name}"
    if (module, name) in _ALLOWED:
        return _Global(qualified, _ALLOWED[(module, name)])
    if qualified == _RECONSTRUCTOR:
        return _Global(qualified, _NOT_ALLOWED)
    if module.partition(".")[0] in _STDLIB:
        raise PickleRefused(qualified, "a standard-library type outside the decoder's allowlist")
    return _Global(qualified, _NOT_ALLOWED)


class _Machine:
    """Runs pickle opcodes on inert nodes (see above); one instance per payload. What it holds grows by
    at most one entry an opcode, and by at most ``max_values`` entries in all."""

    def __init__(self, max_values: int) -> None:
        self.stack: list[Any] = []
        self.marks: list[int] = []
        self.memo: dict[int, Any] = {}
        self.max_values = max_values
        self.room = max_values  # stack pushes and memo entries left

    def grow(self) -> None:
        self.room -= 1
        if self.room < 0:
            raise OverBudget(
                "max_nodes", f"a pickle that pushes or memoizes more than the decode budget of {self.max_values:,} values"
            )

    def run(self, raw: bytes) -> Any:
        for opcode, arg, position in pickletools.genops(raw):
            name = opcode.name
            handler = _OPCODES.get(name)
            if handler is None:
                raise PickleRefused("payload", f"opcode {name} at byte {position} is not decoded")
            if handler(self, arg):
                if len(self.stack) != 1 or self.marks:
                    raise PickleRefused("payload", f"malformed pickle: STOP at byte {position} with an unbalanced stack")
                return self.stack[0]
        raise PickleRefused("payload", "malformed pickle: no STOP")  # genops raises this first

    # -- stack helpers ---------------------------------------------------------------------------------

    def pop(self) -> Any:
        if not self.stack or (self.marks and self.marks[-1] == len(self.stack)):
            raise PickleRefused("payload", "malformed pickle: an opcode found no value on the stack")
        return self.stack.pop()

    def pop_mark(self) -> list[Any]:
        if not self.marks:
            raise PickleRefused("payload", "malformed pickle: an opcode found no MARK")
        at = self.marks.pop()
        items = self.stack[at:]
        del self.stack[at:]
        return items

    def top(self) -> Any:
        if not self.stack or (self.marks and self.marks[-1] == len(self.stack)):
            raise PickleRefused("payload", "malformed pickle: an opcode found no value on the stack")
        return self.stack[-1]

    # -- opcodes (each returns True only for STOP) -------------------------------------------------------

    def push(self, value: Any) -> None:
        self.grow()
        self.stack.append(value)

    def mark(self, arg: Any) -> None:
        self.marks.append(len(self.stack))

    def stop(self, arg: Any) -> bool:
        return True

    def discard(self, arg: Any) -> None:
        self.pop()

    def discard_mark(self, arg: Any) -> None:
        self.pop_mark()

    def dup(self, arg: Any) -> None:
        self.push(self.top())

    def leaf(self, arg: Any) -> None:
        self.push(arg)

    def none(self, arg: Any) -> None:
        self.push(None)

    def true(self, arg: Any) -> None:
        self.push(True)

    def false(self, arg: Any) -> None:
        self.push(False)

    def empty_list(self, arg: Any) -> None:
        self.push([])

    def empty_dict(self, arg: Any) -> None:
        self.push(_Dict())

    def empty_tuple(self, arg: Any) -> None:
        self.push(())

    def empty_set(self, arg: Any) -> None:
        self.push(_Set(False, []))

    def list_(self, arg: Any) -> None:
        self.push(self.pop_mark())

    def tuple_(self, arg: Any) -> None:
        self.push(tuple(self.pop_mark()))

    def tuple1(self, arg: Any) -> None:
        self.push((self.pop(),))

    def tuple2(self, arg: Any) -> None:
        second = self.pop()
        self.push((self.pop(), second))

    def tuple3(self, arg: Any) -> None:
        third, second = self.pop(), self.pop()
        self.push((self.pop(), second, third))

    def dict_(self, arg: Any) -> None:
        items = self.pop_mark()
        if len(items) % 2:
            raise PickleRefused("payload", "malformed pickle: DICT with an odd number of items")
        node = _Dict()
        node.pairs = list(zip(items[::2], items[1::2]))
        self.push(node)

    def frozenset_(self, arg: Any) -> None:
        self.push(_Set(True, self.pop_mark()))

    def append(self, arg: Any) -> None:
        item = self.pop()
        self._add_list_items(self.top(), [item])

    def appends(self, arg: Any) -> None:
        items = self.pop_mark()
        self._add_list_items(self.top(), items)

    def setitem(self, arg: Any) -> None:
        value, key = self.pop(), self.pop()
        self._add_dict_items(self.top(), [(key, value)])

    def setitems(self, arg: Any) -> None:
        items = self.pop_mark()
        if len(items) % 2:
            raise PickleRefused("payload", "malformed pickle: SETITEMS with an odd number of items")
        self._add_dict_items(self.top(), list(zip(items[::2], items[1::2])))

    def additems(self, arg: Any) -> None:
        items = self.pop_mark()
        target = self.top()
        if not isinstance(target, _Set) or target.frozen:
            raise PickleRefused("payload", "malformed pickle: ADDITEMS on something other than a set")
        target.items.extend(items)

    def _add_list_items(self, target: Any, items: list[Any]) -> None:
        if isinstance(target, list):
            target.extend(items)
        elif isinstance(target, _Built):
            if target.list_items is None:
                target.list_items = []
            target.list_items.extend(items)
        else:
            raise PickleRefused("payload", f"malformed pickle: items appended to {_node_kind(target)}")

    def _add_dict_items(self, target: Any, pairs: list[tuple[Any, Any]]) -> None:
        if isinstance(target, _Dict):
            target.pairs.extend(pairs)
        elif isinstance(target, _Built):
            if target.dict_items is None:
                target.dict_items = []
            target.dict_items.extend(pairs)
        else:
            raise PickleRefused("payload", f"malformed pickle: items set on {_node_kind(target)}")

    def global_(self, arg: Any) -> None:
        module, _, name = str(arg).partition(" ")
        self.push(_resolve_global(module, name))

    def stack_global(self, arg: Any) -> None:
        name, module = self.pop(), self.pop()
        if not isinstance(module, str) or not isinstance(name, str):
            raise PickleRefused("payload", "malformed pickle: STACK_GLOBAL needs a module and a name as text")
        self.push(_resolve_global(module, name))

    def reduce(self, arg: Any) -> None:
        args, callee = self.pop(), self.pop()
        if not isinstance(args, tuple):
            raise PickleRefused("payload", "malformed pickle: REDUCE arguments are not a tuple")
        self.push(_built(callee, "call", args))

    def newobj(self, arg: Any) -> None:
        args, callee = self.pop(), self.pop()
        if not isinstance(args, tuple):
            raise PickleRefused("payload", "malformed pickle: NEWOBJ arguments are not a tuple")
        self.push(_built(callee, "new", args))

    def newobj_ex(self, arg: Any) -> None:
        kwargs, args, callee = self.pop(), self.pop(), self.pop()
        if not isinstance(args, tuple) or not isinstance(kwargs, _Dict):
            raise PickleRefused("payload", "malformed pickle: NEWOBJ_EX needs a tuple and a dict")
        if kwargs.pairs:  # no class DBOS stores is rebuilt with keyword arguments to __new__
            raise PickleRefused(_callee_name(callee), "rebuilt with keyword arguments to __new__, which the decoder does not record")
        self.push(_built(callee, "new", args))

    def inst(self, arg: Any) -> None:
        module, _, name = str(arg).partition(" ")
        self._instantiate(_resolve_global(module, name), tuple(self.pop_mark()))

    def obj(self, arg: Any) -> None:
        items = self.pop_mark()
        if not items:
            raise PickleRefused("payload", "malformed pickle: OBJ without a class")
        self._instantiate(items[0], tuple(items[1:]))

    def _instantiate(self, callee: Any, args: tuple[Any, ...]) -> None:
        # What pickle's INST/OBJ do for a class: call it with arguments, else ``cls.__new__(cls)``.
        self.push(_built(callee, "call" if args else "new", args))

    def build(self, arg: Any) -> None:
        state = self.pop()
        target = self.top()
        if not isinstance(target, _Built):
            # e.g. state for a class object itself: recording it would let one payload change a type.
            raise PickleRefused("payload", f"BUILD gives state to {_node_kind(target)}, not to an object the pickle built")
        target.state = state

    def put(self, arg: Any) -> None:
        self.grow()
        self.memo[int(arg)] = self.top()

    def memoize(self, arg: Any) -> None:
        self.grow()
        self.memo[len(self.memo)] = self.top()

    def get(self, arg: Any) -> None:
        try:
            self.push(self.memo[int(arg)])
        except KeyError:
            raise PickleRefused("payload", f"malformed pickle: memo entry {arg} is read before it is written") from None

    def proto(self, arg: Any) -> None:
        if not 0 <= int(arg) <= 5:
            raise PickleRefused("payload", f"pickle protocol {arg} is not one the decoder reads (0-5)")

    def frame(self, arg: Any) -> None:
        pass  # framing only groups opcodes; genops reads through frames

    def persistent(self, arg: Any) -> None:
        raise PickleRefused("persistent id", "pickles that reference external objects are not decoded")

    def extension(self, arg: Any) -> None:
        raise PickleRefused("extension code", "pickles that name classes through the copyreg extension registry are not decoded")

    def buffer(self, arg: Any) -> None:
        raise PickleRefused("out-of-band buffer", "pickles with out-of-band buffers are not decoded")


def _built(callee: Any, how: str, args: tuple[Any, ...]) -> _Built:
    if not isinstance(callee, _Global):
        raise PickleRefused("payload", f"malformed pickle: {_node_kind(callee)} is called as a class")
    if not callee.callable_by_convention:
        raise PickleRefused(callee.qualified, "rebuilt by calling a function, which the decoder never does")
    return _Built(callee, how, args)


def _callee_name(callee: Any) -> str:
    return callee.qualified if isinstance(callee, _Global) else "payload"


def _node_kind(node: Any) -> str:
    if isinstance(node, _Global):
        return node.qualified
    if isinstance(node, _Built):
        return f"a {node.callee.qualified}"
    if isinstance(node, _Dict):
        return "a dict"
    if isinstance(node, _Set):
        return "a frozenset" if node.frozen else "a set"
    return f"a {type(node).__name__}"


_M = _Machine
_OPCODES: dict[str, Callable[[_Machine, Any], Any]] = {
    "MARK": _M.mark, "STOP": _M.stop, "POP": _M.discard, "POP_MARK": _M.discard_mark, "DUP": _M.dup,
    "FLOAT": _M.leaf, "BINFLOAT": _M.leaf, "INT": _M.leaf, "BININT": _M.leaf, "BININT1": _M.leaf, "BININT2": _M.leaf,
    "LONG": _M.leaf, "LONG1": _M.leaf, "LONG4": _M.leaf, "STRING": _M.leaf, "BINSTRING": _M.leaf,
    "SHORT_BINSTRING": _M.leaf, "UNICODE": _M.leaf, "BINUNICODE": _M.leaf, "SHORT_BINUNICODE": _M.leaf,
    "BINUNICODE8": _M.leaf, "BINBYTES": _M.leaf, "SHORT_BINBYTES": _M.leaf, "BINBYTES8": _M.leaf,
    "BYTEARRAY8": _M.leaf, "NONE": _M.none, "NEWTRUE": _M.true, "NEWFALSE": _M.false,
    "EMPTY_LIST": _M.empty_list, "EMPTY_DICT": _M.empty_dict, "EMPTY_TUPLE": _M.empty_tuple, "EMPTY_SET": _M.empty_set,
    "LIST": _M.list_, "TUPLE": _M.tuple_, "TUPLE1": _M.tuple1, "TUPLE2": _M.tuple2, "TUPLE3": _M.tuple3,
    "DICT": _M.dict_, "FROZENSET": _M.frozenset_, "APPEND": _M.append, "APPENDS": _M.appends,
    "SETITEM": _M.setitem, "SETITEMS": _M.setitems, "ADDITEMS": _M.additems,
    "GLOBAL": _M.global_, "STACK_GLOBAL": _M.stack_global, "REDUCE": _M.reduce, "NEWOBJ": _M.newobj,
    "NEWOBJ_EX": _M.newobj_ex, "INST": _M.inst, "OBJ": _M.obj, "BUILD": _M.build,
    "PUT": _M.put, "BINPUT": _M.put, "LONG_BINPUT": _M.put, "MEMOIZE": _M.memoize,
    "GET": _M.get, "BINGET": _M.get, "LONG_BINGET": _M.get, "PROTO": _M.proto, "FRAME": _M.frame,
    "PERSID": _M.persistent, "BINPERSID": _M.persistent, "EXT1": _M.extension, "EXT2": _M.extension,
    "EXT4": _M.extension, "NEXT_BUFFER": _M.buffer, "READONLY_BUFFER": _M.buffer,
}  # fmt: skip


# --- writing typed JSON under the budget -----------------------------------------------------------------

_TEXT_ENCODINGS = frozenset({"latin1", "latin-1", "utf-8", "utf8", "ascii"})  # no codec lookup imports anything
_MAX_INT_BITS = 14_000  # about 4,200 digits: Python 3.11+ converts no longer integer to text (JSON)
_LEAF_TYPES = (
    int, float, str, bool, complex, datetime.datetime, datetime.date, datetime.time, datetime.timedelta,
    datetime.timezone, decimal.Decimal,
)  # fmt: skip


def _is_text_encoding(value: Any) -> bool:
    return isinstance(value, str) and value in _TEXT_ENCODINGS  # a decoded node need not be hashable


def _base64_size(count: int) -> int:
    return 4 * ((count + 2) // 3)


class _Writer:
    """Typed JSON for decoded nodes (or plain JSON values), spending from a ``BudgetMeter``. Every value
    written costs a node, also each time a shared one is written again; a value inside itself is refused.
    Arguments of value constructors are checked (and sizes charged) before the real constructor runs."""

    def __init__(self, meter: BudgetMeter) -> None:
        self.meter = meter
        self.open: set[int] = set()  # ids of the containers being written, to refuse cycles

    def write(self, node: Any, depth: int = 0) -> Any:
        meter = self.meter
        # spend_nodes and check_depth, inline: this runs once for every value written
        if meter.nodes >= meter.budget.max_nodes:
            meter.spend_nodes()
        meter.nodes += 1
        if depth > meter.budget.max_depth:
            meter.check_depth(depth)
        kind = type(node)
        if kind is str:
            return self.text(node)
        if node is None or kind is bool:
            meter.spend_bytes(5)
            return node
        if kind is int or isinstance(node, int):
            bits = node.bit_length()
            if bits > _MAX_INT_BITS:
                raise PickleRefused("int", f"an integer of {bits:,} bits, too long to write as JSON")
            meter.spend_bytes(bits // 3 + 2)
            return int(node)
        if isinstance(node, float):
            self.meter.spend_bytes(24)
            return node if math.isfinite(node) else {TYPE_KEY: "float", "value": repr(node)}
        if isinstance(node, (bytes, bytearray)):
            self.meter.spend_bytes(_base64_size(len(node)))
            name = "bytes" if isinstance(node, bytes) else "bytearray"
            return {TYPE_KEY: name, "base64": base64.b64encode(bytes(node)).decode("ascii")}
        if isinstance(node, (list, tuple, dict, _Dict, _Set, _Built)):
            key = id(node)
            if key in self.open:
                raise PickleRefused("payload", "a value that contains itself (a cycle cannot be written as JSON)")
            self.open.add(key)
            try:
                return self.container(node, depth)
            finally:
                self.open.discard(key)
        if isinstance(node, _Global):
            return self.type_entry(node)
        return self.leaf_value(node)

    def text(self, value: str) -> str:
        meter = self.meter
        meter.bytes += len(value) + 2
        if meter.bytes > meter.budget.max_bytes:
            meter.bytes -= len(value) + 2
            meter.spend_bytes(len(value) + 2)
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise PickleRefused("str", "a string with a lone surrogate, which is not text a history can hold") from None
        return value

    def items(self, items: Any, depth: int) -> list[Any]:
        written = []
        for item in items:
            written.append(self.write(item, depth))
        return written

    def pairs(self, pairs: Any, depth: int) -> list[list[Any]]:
        written = []
        for key, value in pairs:
            if isinstance(key, (list, _Dict)) or (isinstance(key, _Set) and not key.frozen):
                raise PickleRefused("payload", f"a dict key that is {_node_kind(key)}, which is not hashable")
            written.append([self.write(key, depth + 1), self.write(value, depth + 1)])
        return written

    def mapping(self, pairs: list[tuple[Any, Any]], depth: int) -> Any:
        if all(isinstance(key, str) for key, _ in pairs) and not any(key == TYPE_KEY for key, _ in pairs):
            plain: dict[str, Any] = {}
            for key, value in pairs:
                plain[self.text(key)] = self.write(value, depth + 1)
            return plain
        return {TYPE_KEY: "dict", "items": self.pairs(pairs, depth + 2)}

    def container(self, node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return self.items(node, depth + 1)
        if isinstance(node, tuple):
            return {TYPE_KEY: "tuple", "items": self.items(node, depth + 2)}
        if isinstance(node, dict):  # plain JSON (portable payloads)
            return self.mapping(list(node.items()), depth)
        if isinstance(node, _Dict):
            return self.mapping(node.pairs, depth)
        if isinstance(node, _Set):
            return {TYPE_KEY: "frozenset" if node.frozen else "set", "items": sorted(self.items(node.items, depth + 2), key=repr)}
        return self.built(node, depth)

    def type_entry(self, node: _Global) -> Any:
        if (node.allowed and not isinstance(node.real, type)) or node.qualified == _RECONSTRUCTOR:
            raise PickleRefused(node.qualified, "not representable as data")
        if not node.callable_by_convention:
            raise PickleRefused(node.qualified, "a function, which the decoder does not record as data")
        self.meter.spend_bytes(len(node.qualified))
        return {TYPE_KEY: "type", "name": _type_name(node.real) if node.allowed else node.qualified}

    # -- what pickle rebuilds by calling a global ---------------------------------------------------------

    def built(self, node: _Built, depth: int) -> Any:
        callee = node.callee
        if callee.qualified == _RECONSTRUCTOR:
            return self.reconstructed(node, depth)
        if not callee.allowed:
            return self.inert_object(node, callee.qualified, node.how, node.args, depth)
        real = callee.real
        if isinstance(real, type) and issubclass(real, BaseException):
            # The exception's instance state (BUILD) is not part of the typed form.
            return {TYPE_KEY: "exception", "class": _type_name(real), "args": self.items(node.args, depth + 2)}
        if real in (list, tuple, set, frozenset):
            self.only(node, state=False, list_items=False, dict_items=False)
            items = self.iterable(node.args[0], callee.qualified, depth) if node.args else ()
            if real is list:
                return self.items(items, depth + 1)
            if real is tuple:
                return {TYPE_KEY: "tuple", "items": self.items(items, depth + 2)}
            kind = "set" if real is set else "frozenset"
            return {TYPE_KEY: kind, "items": sorted(self.items(items, depth + 2), key=repr)}
        if real in (dict, collections.OrderedDict, collections.Counter, collections.defaultdict):
            return self.dict_like(node, real, depth)
        if real is collections.deque:
            self.only(node, state=False, list_items=True, dict_items=False)
            args = node.args
            items = list(self.iterable(args[0], callee.qualified, depth)) if args else []
            maxlen = args[1] if len(args) > 1 else None
            if maxlen is not None and (not isinstance(maxlen, int) or isinstance(maxlen, bool) or maxlen < 0):
                raise PickleRefused(callee.qualified, "maxlen must be a non-negative integer or None")
            items.extend(node.list_items or [])
            if maxlen is not None:
                items = items[len(items) - maxlen :] if maxlen else []
            return {TYPE_KEY: "collections.deque", "items": self.items(items, depth + 2), "maxlen": maxlen}
        return self.write(self.leaf(node, depth), depth)

    def only(self, node: _Built, *, state: bool, list_items: bool, dict_items: bool) -> None:
        """Refuse what pickle added to a value of an allowlisted type that its typed form cannot hold."""
        name = node.callee.qualified
        if node.state is not None and not state:
            raise PickleRefused(name, "instance state (BUILD) on this type is not decoded")
        if node.list_items is not None and not list_items:
            raise PickleRefused(name, "items appended to this type are not decoded")
        if node.dict_items is not None and not dict_items:
            raise PickleRefused(name, "items set on this type are not decoded")

    def iterable(self, node: Any, owner: str, depth: int) -> Any:
        """The items a constructor argument holds: a list, tuple or set as decoded, or a ``range`` whose
        length is checked against the budget before it is expanded."""
        if isinstance(node, (list, tuple)):
            return node
        if isinstance(node, _Set):
            return node.items
        if isinstance(node, _Built) and node.callee.real is range and node.how == "call":
            bounds = node.args
            if not bounds or len(bounds) > 3 or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
                raise PickleRefused("builtins.range", "arguments must be one to three integers")
            try:
                span = range(*bounds)
                length = len(span)
            except (ValueError, OverflowError):
                length = self.meter.budget.max_nodes + 1  # zero step or longer than an index can count
                span = range(0)
            self.meter.require_nodes(length)
            return span
        raise PickleRefused(owner, f"built from {_node_kind(node)}, which the decoder does not expand")

    def dict_like(self, node: _Built, real: Any, depth: int) -> Any:
        name = node.callee.qualified
        self.only(node, state=False, list_items=False, dict_items=True)
        args = node.args
        factory: Any = None
        if real is collections.defaultdict:
            if args:
                factory, args = args[0], args[1:]
            if factory is not None and (not isinstance(factory, _Global) or (factory.allowed and not isinstance(factory.real, type))):
                raise PickleRefused(name, f"default factory {_node_kind(factory)} is not a class")
        if len(args) > 1:
            raise PickleRefused(name, "built with more than one argument")
        pairs: list[tuple[Any, Any]] = []
        if args:
            source = args[0]
            if isinstance(source, (_Dict, dict)):
                pairs.extend(source.pairs if isinstance(source, _Dict) else source.items())
            elif real is not collections.Counter and isinstance(source, (list, tuple)):
                for pair in source:
                    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                        raise PickleRefused(name, "built from a sequence that is not of pairs")
                    pairs.append((pair[0], pair[1]))
            else:
                raise PickleRefused(name, f"built from {_node_kind(source)}, which the decoder does not expand")
        pairs.extend(node.dict_items or [])
        if real is dict:
            return self.mapping(pairs, depth)
        if real is collections.defaultdict:
            factory_name = "None" if factory is None else (_type_name(factory.real) if factory.allowed else factory.qualified)
            self.meter.spend_bytes(len(factory_name))
            return {TYPE_KEY: "collections.defaultdict", "factory": factory_name, "items": self.pairs(pairs, depth + 2)}
        return {TYPE_KEY: _type_name(real), "items": self.pairs(pairs, depth + 2)}

    def reconstructed(self, node: _Built, depth: int) -> Any:
        """``copyreg._reconstructor(cls, object, None)`` (protocols 0 and 1): ``cls.__new__(cls)``."""
        args = node.args
        if node.how == "call" and len(args) == 3 and isinstance(args[0], _Global) and isinstance(args[1], _Global):
            cls, base, base_state = args
            if base.real is object and base_state is None:
                if cls.real is uuid.UUID:
                    return self.write(self.uuid(node), depth)
                if not cls.allowed and cls.callable_by_convention:
                    return self.inert_object(node, cls.qualified, "new", (), depth)
        raise PickleRefused(_RECONSTRUCTOR, "only plain objects can be rebuilt this way")

    def inert_object(self, node: _Built, class_name: str, how: str, args: tuple[Any, ...], depth: int) -> Any:
        """An instance of a class outside the allowlist, as what pickle would have done to rebuild it."""
        self.meter.spend_bytes(len(class_name))
        typed: dict[str, Any] = {TYPE_KEY: "object", "class": class_name}
        if how == "call":
            typed["call_args"] = self.items(args, depth + 2)
        elif args:
            typed["new_args"] = self.items(args, depth + 2)
        if node.state is not None:
            typed["state"] = self.write(node.state, depth + 1)
        if node.list_items is not None:
            typed["list_items"] = self.items(node.list_items, depth + 2)
        if node.dict_items is not None:
            typed["dict_items"] = self.pairs(node.dict_items, depth + 2)
        return typed

    # -- small values: arguments checked, then the real constructor ----------------------------------------

    def leaf(self, node: Any, depth: int) -> Any:
        """The real value of a small value type (numbers, text, bytes, dates, ``Decimal``, ``UUID``)."""
        self.meter.spend_nodes()  # arguments can share nodes through the memo too
        self.meter.check_depth(depth)
        if node is None or isinstance(node, (bool, int, float, str, bytes, bytearray)):
            return node
        if isinstance(node, tuple):
            return tuple([self.leaf(item, depth + 1) for item in node])
        if not isinstance(node, _Built) or not node.callee.allowed:
            raise PickleRefused("payload", f"{_node_kind(node)} where the decoder expects a plain value")
        real, name = node.callee.real, node.callee.qualified
        if real is uuid.UUID:
            return self.uuid(node)
        self.only(node, state=False, list_items=False, dict_items=False)
        if node.how != "call":
            raise PickleRefused(name, "rebuilt through __new__, which the decoder does not do for this type")
        if real in (bytes, bytearray) or real is codecs.encode:
            return self.byte_string(node, depth)
        if real is uuid.SafeUUID or real not in _LEAF_TYPES:
            raise PickleRefused(name, "not representable as data")
        args = self.leaf(node.args, depth + 1)
        for arg in args:
            if isinstance(arg, (str, bytes, bytearray)):
                self.meter.require_bytes(len(arg))
        try:
            return real(*args)
        except (TypeError, ValueError, OverflowError, ArithmeticError) as error:
            raise PickleRefused(name, f"arguments it does not accept: {type(error).__name__}: {error}") from None

    def byte_string(self, node: _Built, depth: int) -> bytes | bytearray:
        """``bytes``/``bytearray`` from a length, a byte string, text and an encoding, or integers; and
        ``_codecs.encode(text, "latin1")`` (protocols 0-2). The size is charged before anything is made."""
        real, name, args = node.callee.real, node.callee.qualified, node.args
        make = bytearray if real is bytearray else bytes
        if real is codecs.encode:
            if len(args) not in (2, 3) or not isinstance(args[0], str) or not _is_text_encoding(args[1]):
                raise PickleRefused(name, "only text with the latin1 encoding is decoded this way")
            self.meter.require_bytes(_base64_size(len(args[0]) * 4))
            try:
                return args[0].encode(args[1])
            except UnicodeError as error:
                raise PickleRefused(name, f"text it cannot encode: {error}") from None
        if not args:
            return make()
        source = args[0]
        if isinstance(source, bool) or (isinstance(source, int) and len(args) == 1):
            if isinstance(source, bool) or source < 0:
                raise PickleRefused(name, "a length must be a non-negative integer")
            self.meter.require_bytes(_base64_size(source))  # refused before a byte is allocated
            return make(source)
        if isinstance(source, str) and len(args) in (2, 3) and _is_text_encoding(args[1]):
            self.meter.require_bytes(_base64_size(len(source) * 4))
            try:
                return make(source.encode(args[1]))
            except UnicodeError as error:
                raise PickleRefused(name, f"text it cannot encode: {error}") from None
        if len(args) == 1 and isinstance(source, _Built) and source.callee.real is codecs.encode:
            return make(self.byte_string(source, depth + 1))
        if len(args) == 1 and isinstance(source, (bytes, bytearray)):
            return make(source)
        if len(args) == 1 and isinstance(source, (list, tuple)):
            if not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b < 256 for b in source):
                raise PickleRefused(name, "built from a sequence that is not of integers 0-255")
            return make(source)
        raise PickleRefused(name, "arguments the decoder does not accept (a length, bytes, text and an encoding, or integers)")

    def uuid(self, node: _Built) -> uuid.UUID:
        """A ``UUID`` from the state pickle gives it (``{"int": N, "is_safe": ...}``), or from text."""
        if node.how == "call" and node.callee.real is uuid.UUID:
            args = node.args
            if len(args) != 1 or not isinstance(args[0], str) or len(args[0]) > 64 or node.state is not None:
                raise PickleRefused("uuid.UUID", "only a UUID's text or its integer state is decoded")
            try:
                return uuid.UUID(args[0])
            except ValueError as error:
                raise PickleRefused("uuid.UUID", f"not a UUID: {error}") from None
        state = node.state
        number = None
        if isinstance(state, _Dict):
            number = next((value for key, value in state.pairs if key == "int"), None)
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number < 1 << 128:
            raise PickleRefused("uuid.UUID", "state without an integer 'int' field of 128 bits")
        return uuid.UUID(int=number)

    def leaf_value(self, value: Any) -> Any:
        """Typed JSON for a real value the constructors above made."""
        self.meter.spend_bytes(48)
        if isinstance(value, complex):
            return {TYPE_KEY: "complex", "real": self.write(value.real), "imag": self.write(value.imag)}
        if isinstance(value, datetime.datetime):
            return {TYPE_KEY: "datetime.datetime", "iso": value.isoformat()}
        if isinstance(value, datetime.date):
            return {TYPE_KEY: "datetime.date", "iso": value.isoformat()}
        if isinstance(value, datetime.time):
            return {TYPE_KEY: "datetime.time", "iso": value.isoformat()}
        if isinstance(value, datetime.timedelta):
            return {TYPE_KEY: "datetime.timedelta", "days": value.days, "seconds": value.seconds, "microseconds": value.microseconds}
        if isinstance(value, datetime.timezone):
            offset = value.utcoffset(None)
            return {TYPE_KEY: "datetime.timezone", "offset_seconds": offset.total_seconds(), "name": self.text(value.tzname(None))}
        if isinstance(value, decimal.Decimal):
            return {TYPE_KEY: "decimal.Decimal", "value": self.text(str(value))}
        if isinstance(value, uuid.UUID):
            return {TYPE_KEY: "uuid.UUID", "hex": value.hex}
        raise PickleRefused(_type_name(type(value)), "not representable as data")


def decode_pickle(text: str, meter: BudgetMeter | None = None) -> Any:
    """Typed JSON for a DBOS ``py_pickle`` payload (base64 pickle), spending from ``meter`` (a fresh
    default budget when not given). ``PickleRefused`` names a refused type; ``OverBudget`` the budget."""
    meter = meter or BudgetMeter()
    if len(text) // 4 * 3 > meter.budget.max_bytes:  # checked before the text is decoded at all
        raise OverBudget("max_bytes", f"a pickle larger than the decode budget of {meter.budget.max_bytes:,} bytes")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise PickleRefused("payload", f"not base64: {error}") from None
    try:
        node = _Machine(meter.budget.max_nodes).run(raw)
    except PickleRefused:
        raise
    except Exception as error:  # truncated data, an unknown opcode, an argument genops cannot parse
        raise PickleRefused("payload", f"not a pickle the decoder can read: {type(error).__name__}: {error}") from None
    return _write_bounded(node, meter)


def to_typed(value: Any, meter: BudgetMeter | None = None) -> Any:
    """Typed JSON for a plain JSON value (portable payloads), spending from ``meter`` as ``decode_pickle``."""
    return _write_bounded(value, meter or BudgetMeter())


def _write_bounded(node: Any, meter: BudgetMeter) -> Any:
    # The writer takes up to three frames a level; a depth budget raised past the default needs room.
    limit = sys.getrecursionlimit()
    needed = 200 + 4 * meter.budget.max_depth + _frames_above()
    if needed > limit:
        sys.setrecursionlimit(needed)
    try:
        return _Writer(meter).write(node)
    except RecursionError:  # a backstop: the depth budget stops before the interpreter's limit
        raise OverBudget("max_depth", "nested deeper than the interpreter can follow; lower the depth budget") from None
    finally:
        if needed > limit:
            sys.setrecursionlimit(limit)


def _frames_above() -> int:
    count, frame = 0, sys._getframe()
    while frame is not None:
        count, frame = count + 1, frame.f_back  # type: ignore[assignment]
    return count


def _type_name(cls: Any) -> str:
    if cls is None:
        return "None"
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', getattr(cls, '__name__', '?'))}"


def classes_in(typed: Any) -> list[str]:
    """Every class an ``"object"`` entry names (to warn about ``__main__`` classes at import)."""
    found: list[str] = []
    stack = [typed]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get(TYPE_KEY) in ("object", "exception") and isinstance(item.get("class"), str):
                found.append(item["class"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


# --- rebuilding at replay ---------------------------------------------------------------------------


class Rebuilder:
    """Rebuilds the typed JSON of one history, counting the recorded classes it left as plain data
    because the current code has not imported their modules (``note`` says so once per history)."""

    def __init__(self) -> None:
        self.as_data: collections.Counter[str] = collections.Counter()
        self.stand_in_errors: collections.Counter[str] = collections.Counter()

    def rebuild(self, typed: Any) -> Any:
        """The Python value typed JSON describes (``RebuildError`` names what cannot be rebuilt)."""
        if isinstance(typed, list):
            return [self.rebuild(item) for item in typed]
        if not isinstance(typed, dict):
            return typed
        kind = typed.get(TYPE_KEY)
        if kind is None:
            return {key: self.rebuild(item) for key, item in typed.items()}
        builder = _BUILDERS.get(kind)
        if builder is None:
            raise RebuildError(f"unknown typed value {kind!r}")
        return builder(self, typed)

    def note(self) -> str | None:
        """What reached the code other than as recorded, or ``None`` when every class was rebuilt."""
        parts = []
        if self.as_data:
            count = sum(self.as_data.values())
            parts.append(
                f"{count} recorded object{'s' if count != 1 else ''} of {_classes(self.as_data)} the workflow code "
                f"has not imported ({', '.join(sorted(self.as_data))}) reached the code as {'dicts' if count != 1 else 'a dict'}"
            )
        if self.stand_in_errors:
            count = sum(self.stand_in_errors.values())
            parts.append(
                f"{count} recorded exception{'s' if count != 1 else ''} of {_classes(self.stand_in_errors)} the workflow "
                f"code has not imported ({', '.join(sorted(self.stand_in_errors))}) "
                f"{'were' if count != 1 else 'was'} raised as a stand-in Exception of the same name"
            )
        if not parts:
            return None
        return "; ".join(parts) + " (replay imports no module a history names)"

    def error(self, typed: Any) -> Any:
        """A recorded exception (it is raised, so it cannot reach the code as a dict): as ``rebuild``,
        except that an ``object`` entry of a class whose module is not imported — how pickle records
        most exceptions — becomes a stand-in ``Exception`` of that name with the recorded arguments."""
        name = typed.get("class") if isinstance(typed, dict) and typed.get(TYPE_KEY) == "object" else None
        if not isinstance(name, str) or _imported_class(name) is not None:
            return self.rebuild(typed)
        self.stand_in_errors[name] += 1
        error = _stand_in_exception(name)(*self.rebuild(typed.get("call_args", typed.get("new_args", []))))
        state = self.rebuild(typed.get("state"))
        if isinstance(state, dict):
            error.__dict__.update(state)
        return error

    # -- builders ------------------------------------------------------------------------------------

    def items(self, typed: Mapping[str, Any]) -> list[Any]:
        return [self.rebuild(item) for item in typed.get("items", [])]

    def pair_items(self, typed: Mapping[str, Any]) -> list[tuple[Any, Any]]:
        return [(_hashable(self.rebuild(key)), self.rebuild(value)) for key, value in typed.get("items", [])]

    def object(self, typed: Mapping[str, Any]) -> Any:
        name = typed.get("class", "?")
        cls = _imported_class(name)
        if cls is None:
            self.as_data[name] += 1
            return self._plain(typed)
        if "call_args" in typed:
            import enum

            if not (issubclass(cls, (BaseException, enum.Enum))):
                raise RebuildError(f"{name} was pickled as a constructor call; replay redoes that only for exceptions and enums")
            instance: Any = cls(*self.rebuild(typed["call_args"]))
        else:
            instance = cls.__new__(cls, *self.rebuild(typed.get("new_args", [])))
        if "state" in typed:
            _set_state(instance, self.rebuild(typed["state"]))
        for item in self.rebuild(typed.get("list_items", [])):
            instance.append(item)
        for key, value in typed.get("dict_items", []):
            instance[_hashable(self.rebuild(key))] = self.rebuild(value)
        return instance

    def _plain(self, typed: Mapping[str, Any]) -> Any:
        """An object whose class is not imported, as plain data: its recorded state when that is the
        instance dict (plain classes and dataclasses, with slots merged in), its items when it only has
        items; otherwise the recorded entry itself, values rebuilt."""
        recorded = {key: typed[key] for key in ("new_args", "call_args", "state", "list_items", "dict_items") if key in typed}
        state = self.rebuild(recorded.get("state"))
        if isinstance(state, list) and len(state) == 2 and all(part is None or isinstance(part, dict) for part in state):
            state = {**(state[0] or {}), **(state[1] or {})}  # (dict, slots), as pickle records it
        if set(recorded) == {"state"} and isinstance(state, dict):
            return state
        if set(recorded) == {"dict_items"}:
            return dict(self.pair_items({"items": recorded["dict_items"]}))
        if set(recorded) == {"list_items"}:
            return self.rebuild(recorded["list_items"])
        return {key: self.rebuild(value) for key, value in typed.items()}

    def exception(self, typed: Mapping[str, Any]) -> BaseException:
        name = typed.get("class", "?")
        module, _, attr = name.rpartition(".")
        cls: Any = _ALLOWED.get((module, attr)) or _imported_class(name)
        if cls is None:
            self.stand_in_errors[name] += 1
            cls = _stand_in_exception(name)
        if not issubclass(cls, BaseException):
            raise RebuildError(f"{name} is not an exception class")
        return cls(*self.rebuild(typed.get("args", [])))  # type: ignore[no-any-return]

    def defaultdict(self, typed: Mapping[str, Any]) -> Any:
        factory_name = typed.get("factory", "None")
        factory = None if factory_name == "None" else _ALLOWED.get(tuple(factory_name.rsplit(".", 1))) or _required_class(factory_name)  # type: ignore[arg-type]
        return collections.defaultdict(factory, self.pair_items(typed))


def rebuild(typed: Any) -> Any:
    """The Python value typed JSON describes (a fresh ``Rebuilder``; see there)."""
    return Rebuilder().rebuild(typed)


def _classes(counts: Mapping[str, int]) -> str:
    return "classes" if len(counts) != 1 else "a class"


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _imported_class(name: str) -> type | None:
    """The class ``name`` in a module the current code has already imported; ``None`` when its module is
    not imported (nothing is imported to find it). ``RebuildError`` for names replay never rebuilds and for
    an imported module that no longer has the class."""
    from replaytest.plugins.recorded_classes import imported_attribute

    if name.partition(".")[0] == "__main__":
        raise RebuildError(
            f"{name} was pickled by an application run as a script (__main__); no other process can "
            "import it — run the application as a module (python -m app) so its classes have an importable name"
        )
    module_name = name.rpartition(".")[0]
    if module_name.partition(".")[0] in _STDLIB and tuple(name.rsplit(".", 1)) not in _ALLOWED:
        raise RebuildError(f"{name} is a standard-library type replay does not rebuild")
    found = imported_attribute(name)
    if found is None:
        return None
    if found.value is None:
        raise RebuildError(f"the current code has no {name} (module {found.module_name} is imported, {found.qualname} is not in it)")
    if not isinstance(found.value, type):
        raise RebuildError(f"{name} is not a class")
    return found.value


def _required_class(name: str) -> type:
    """A class a value cannot stand without (a ``type`` value, a ``defaultdict`` factory)."""
    cls = _imported_class(name)
    if cls is None:
        raise RebuildError(
            f"{name}: the workflow code has not imported its module, and replay imports no module a history "
            "names; import it in the workflow's module (or list that module in DBOSReplayConfig.modules)"
        )
    return cls


def _stand_in_exception(name: str) -> type[Exception]:
    """An ``Exception`` subclass with the recorded class's name, for a class whose module is not imported:
    the workflow's ``except Exception`` and the failure's type name behave as recorded."""
    module_name, _, qualname = name.rpartition(".")
    short = qualname.rpartition(".")[2] or name
    return type(short, (Exception,), {"__module__": module_name, "__qualname__": qualname, "__doc__": f"Stands in for {name}."})


def _set_state(instance: Any, state: Any) -> None:
    """What pickle's BUILD does: ``__setstate__``, else the instance dict and slots."""
    setstate = getattr(instance, "__setstate__", None)
    if setstate is not None:
        setstate(state)
        return
    slots = None
    if isinstance(state, list) and len(state) == 2:  # (dict, slots) arrives as a list through JSON
        state, slots = state
    if isinstance(state, dict):
        instance.__dict__.update(state)
    if isinstance(slots, dict):
        for key, value in slots.items():
            setattr(instance, key, value)


def _timezone(typed: Mapping[str, Any]) -> datetime.timezone:
    offset = datetime.timedelta(seconds=typed["offset_seconds"])
    return datetime.timezone.utc if offset == datetime.timedelta(0) else datetime.timezone(offset)


_BUILDERS: dict[str, Callable[[Rebuilder, Mapping[str, Any]], Any]] = {
    "dict": lambda r, t: dict(r.pair_items(t)),
    "tuple": lambda r, t: tuple(r.items(t)),
    "set": lambda r, t: {_hashable(i) for i in r.items(t)},
    "frozenset": lambda r, t: frozenset(_hashable(i) for i in r.items(t)),
    "bytes": lambda r, t: base64.b64decode(t["base64"]),
    "bytearray": lambda r, t: bytearray(base64.b64decode(t["base64"])),
    "complex": lambda r, t: complex(t["real"], t["imag"]),
    "float": lambda r, t: float(t["value"]),
    "datetime.datetime": lambda r, t: datetime.datetime.fromisoformat(t["iso"]),
    "datetime.date": lambda r, t: datetime.date.fromisoformat(t["iso"]),
    "datetime.time": lambda r, t: datetime.time.fromisoformat(t["iso"]),
    "datetime.timedelta": lambda r, t: datetime.timedelta(days=t["days"], seconds=t["seconds"], microseconds=t["microseconds"]),
    "datetime.timezone": lambda r, t: _timezone(t),
    "decimal.Decimal": lambda r, t: decimal.Decimal(t["value"]),
    "uuid.UUID": lambda r, t: uuid.UUID(hex=t["hex"]),
    "collections.OrderedDict": lambda r, t: collections.OrderedDict(r.pair_items(t)),
    "collections.defaultdict": Rebuilder.defaultdict,
    "collections.Counter": lambda r, t: collections.Counter(dict(r.pair_items(t))),
    "collections.deque": lambda r, t: collections.deque(r.items(t), t.get("maxlen")),
    "exception": Rebuilder.exception,
    "object": Rebuilder.object,
    "type": lambda r, t: _ALLOWED.get(tuple(t["name"].rsplit(".", 1))) or _required_class(t["name"]),  # type: ignore[arg-type]
}
