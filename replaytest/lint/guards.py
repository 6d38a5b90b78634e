"""Parameter guards: hazards a helper reaches only under a condition on its own parameters.

``dedup_key(base, *, force=False)`` that does ``if not force: return base`` before ``uuid.uuid4()`` makes a fresh
UUID only when ``force`` is truthy; a call that omits ``force`` (its default is a falsy literal) or passes a falsy
literal never reaches it. The collector records such a condition on the effect or call site as a *guard*, a
string ``<polarity><name>:<position>:<default>``:

* polarity ``+`` (runs only when the parameter is truthy) or ``-`` (only when it is falsy);
* the parameter's name and its position among the positional parameters a caller fills (``self``/``cls`` of a
  method not counted; -1 when keyword-only);
* ``f`` / ``t`` when its default is a falsy / truthy literal, empty when it has none or another one.

Guards come from ``if p:`` / ``if not p:`` (and ``and`` / ``or`` chains of such tests), an early exit
(``if not p: return ...`` guards the rest of the block), ``p and x()``, ``p or x()`` and ``x() if p else y()``,
for parameters the function never rebinds. A call site records what it passes (``CallSite.values``): falsy or
truthy literals, and the caller's own parameters passed on (``force=force``), so resolution (``apply_guards``)
drops what the call cannot reach, carries a forwarded condition up to the caller (chains of helpers), and keeps
everything else as before (an argument it knows nothing about).
"""

from __future__ import annotations

import ast

from replaytest.lint.model import CallSite

# A guard carried through more helpers than this is dropped (kept reachable): the chains real code has are short.
_MAX_GUARDS = 4


def literal_truth(value: ast.expr | None) -> str:
    """"t" / "f" for a literal that is always truthy / falsy (``True``, ``None``, ``0``, ``""``, ``[]`` ...), else ""."""
    if isinstance(value, ast.Constant):
        if value.value is Ellipsis:
            return ""
        return "t" if value.value else "f"
    if isinstance(value, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        elements = value.keys if isinstance(value, ast.Dict) else value.elts
        return "f" if not elements else ""
    return ""


def parameter_specs(node: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> dict[str, str]:
    """Each named parameter's spec ``name:position:default`` (see the module docstring)."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    skip = 1 if is_method and positional else 0
    specs = {}
    for index, (param, default) in enumerate(zip(positional, defaults)):
        position = index - skip if index >= skip else -1
        specs[param.arg] = f"{param.arg}:{position}:{literal_truth(default)}"
    for param, default in zip(args.kwonlyargs, args.kw_defaults):
        specs[param.arg] = f"{param.arg}:-1:{literal_truth(default)}"
    return specs


def test_guards(test: ast.expr, specs: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The guards a test gives the body and the ``else`` of an ``if`` (or the two arms of ``x if test else y``):
    ``p`` / ``not p`` of a parameter, and ``and`` / ``or`` chains of them."""
    single = _truthiness(test, specs)
    if single:
        return (single,), (_negated(single),)
    if isinstance(test, ast.BoolOp):
        parts = [_truthiness(value, specs) for value in test.values]
        known = tuple(part for part in parts if part)
        if isinstance(test.op, ast.And):
            return known, ()  # the body needs every part truthy; the else, only one falsy
        return (), tuple(_negated(part) for part in known)  # ``or``: the else needs every part falsy
    return (), ()


def _truthiness(test: ast.expr, specs: dict[str, str]) -> str:
    """``+spec`` for a bare parameter, ``-spec`` for ``not parameter``, else ""."""
    if isinstance(test, ast.Name):
        spec = specs.get(test.id)
        return f"+{spec}" if spec else ""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Name):
        spec = specs.get(test.operand.id)
        return f"-{spec}" if spec else ""
    return ""


def _negated(guard: str) -> str:
    return ("-" if guard[0] == "+" else "+") + guard[1:]


def guard_parameter(guard: str) -> str:
    return guard[1:].split(":", 1)[0]


def argument_value(value: ast.expr, specs: dict[str, str], always_truthy: bool) -> str:
    """What an argument tells a guard: "f" / "t" for a falsy / truthy literal (or a value never falsy),
    "@spec" for the caller's own parameter passed on, "" for anything else."""
    truth = literal_truth(value)
    if truth:
        return truth
    if isinstance(value, ast.Name):
        spec = specs.get(value.id)
        if spec:
            return f"@{spec}"
    return "t" if always_truthy else ""


def _passed(site: CallSite, name: str, position: int) -> str | None:
    """What the call passes for a parameter: its recorded value ("" when not known), or None when the call
    certainly leaves it out (known arguments, no unpacking, not by keyword, not by position)."""
    keyword, positional = f"{name}=", f"#{position}=" if position >= 0 else None
    for value in site.values:
        if value.startswith(keyword):
            return value[len(keyword):]
        if positional is not None and value.startswith(positional):
            return value[len(positional):]
    given = site.given
    if not given or not given[0].startswith("#") or "#*" in given or name in given:
        return ""
    count = int(given[0][1:])
    return "" if 0 <= position < count else None


def apply_guards(guards: tuple[str, ...], site: CallSite) -> tuple[str, ...] | None:
    """The callee's guards seen from a call site: None when the call cannot reach what they guard, else the
    guards that still hold, in the caller's terms (forwarded parameters), with the call site's own."""
    if not guards:
        return site.when
    carried: list[str] = []
    for guard in guards:
        polarity, spec = guard[0], guard[1:]
        name, position, default = spec.rsplit(":", 2)
        value = _passed(site, name, int(position))
        if value is None:
            value = default
        if value in ("t", "f"):
            if (value == "t") != (polarity == "+"):
                return None  # the argument makes the condition false: never reached from here
            continue  # the condition holds: nothing left to carry
        if value.startswith("@"):
            carried.append(polarity + value[1:])
    if not carried:
        return site.when
    merged = tuple(dict.fromkeys((*site.when, *carried)))
    return merged[:_MAX_GUARDS]


def common_guards(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    """The guards two paths to one hazard share: it is reachable when either path is."""
    if not first or not second:
        return ()
    return tuple(guard for guard in first if guard in second)
