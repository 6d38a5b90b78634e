"""Whole-program resolution on summaries: from each orchestration entry point, through the project
functions it calls, to the effects it reaches.

The walk follows call sites into functions of other summaries (loading a not-yet-summarised project
module lazily through the ``load`` callback), stops at steps, other orchestration entry points and the
framework's safe calls, and is memoised per (function, framework); recursion and import cycles terminate,
and only complete results are memoised (see ``_reach``). Calls through instances exported by another module
(``from app.llm import client``) are matched against the rule tables here, where the instance's type
is known.
"""

from __future__ import annotations

from collections.abc import Callable

from replaytest.lint.context import LintContext
from replaytest.lint.guards import apply_guards, common_guards
from replaytest.lint.model import (
    MUTATING_METHODS,
    ORCHESTRATION,
    STEP,
    CallSite,
    Effect,
    FunctionSummary,
    ModuleSummary,
)
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.value_flows import RETURN
from replaytest.records import FrozenRecord, replace

_MAX_ALIAS_DEPTH = 8
# The low-link of a result that depends on no function still being walked.
_DONE = 1 << 30
# Item writes recorded as calls (``CACHE[k] = v`` on an imported name), spelt for messages.
_ITEM_WRITES = {"__setitem__": "{name}[...] = ...", "__delitem__": "del {name}[...]"}


class Reached(FrozenRecord):
    """An effect reached from a function, with the chain of qualified names down to it (the last
    element is the effect's own qualified name)."""

    effect: Effect
    chain: tuple[str, ...]
    # Reached through a field's default factory of the constructor: dropped where the call passes the
    # field "name:position" (the factory does not run then).
    unless_given: str = ""
    # Conditions on the parameters of ``chain[0]`` under which it reaches the effect (``lint.guards``), and where
    # the effect's fresh value goes from there (``Effect.flows``; empty: anywhere).
    when: tuple[str, ...] = ()
    flows: tuple[str, ...] = ()

    def __init__(
        self, effect: Effect, chain: tuple[str, ...], unless_given: str = "", when: tuple[str, ...] = (),
        flows: tuple[str, ...] = (),
    ) -> None:
        self.__dict__.update(effect=effect, chain=chain, unless_given=unless_given, when=when, flows=flows)


class Program:
    def __init__(self, context: LintContext, load: Callable[[str], ModuleSummary | None]) -> None:
        self.ctx = context
        self._load = load
        self.modules: dict[str, ModuleSummary] = {}
        self._missing: set[str] = set()
        self._memo: dict[tuple[str, str], list[Reached]] = {}
        # Functions being walked -> their depth in the walk; results that depend on one of them.
        self._active: dict[tuple[str, str], int] = {}
        self._partial: dict[tuple[str, str], tuple[list[Reached], int]] = {}

    def add(self, summary: ModuleSummary, names: tuple[str, ...] = ()) -> None:
        for name in (summary.module, *names):
            self.modules.setdefault(name, summary)

    @property
    def unresolved(self) -> frozenset[str]:
        """Module names the walk tried to load and could not (standard library and third-party ones too)."""
        return frozenset(self._missing)

    def module(self, name: str) -> ModuleSummary | None:
        summary = self.modules.get(name)
        if summary is not None or name in self._missing:
            return summary
        summary = self._load(name)
        if summary is None:
            self._missing.add(name)
            return None
        self.modules[name] = summary
        return summary

    # --- lookups ----------------------------------------------------------------------------

    def find_function(self, qualname: str, depth: int = 0) -> tuple[ModuleSummary, FunctionSummary] | None:
        if depth > _MAX_ALIAS_DEPTH:
            return None
        parts = qualname.split(".")
        for split in range(len(parts) - 1, 0, -1):
            summary = self.module(".".join(parts[:split]))
            if summary is not None:
                return self._in_module(summary, parts[split:], depth)
        return None

    def _in_module(self, summary: ModuleSummary, rest: list[str], depth: int) -> tuple[ModuleSummary, FunctionSummary] | None:
        local = ".".join(rest)
        function = summary.functions.get(local)
        if function is not None:
            return summary, function
        if local in summary.classes:
            init = summary.functions.get(f"{local}.__init__")
            return (summary, init) if init is not None else None
        if len(rest) >= 2:
            owner = ".".join(rest[:-1])
            cls = summary.classes.get(owner)
            if cls is not None:
                for base in cls.bases:
                    found = self.find_function(f"{base}.{rest[-1]}", depth + 1)
                    if found is not None:
                        return found
                return None
        target = summary.aliases.get(rest[0])
        if target is not None:
            return self.find_function(".".join([target, *rest[1:]]), depth + 1)
        return None

    def exported_call(self, qualname: str, depth: int = 0) -> str | None:
        """``app.llm.client.chat.completions.create`` -> ``openai.AsyncOpenAI.chat.completions.create``
        when ``app.llm`` binds ``client`` to an instance; None when no prefix is an exported instance."""
        if depth > _MAX_ALIAS_DEPTH:
            return None
        parts = qualname.split(".")
        for split in range(len(parts) - 1, 0, -1):
            summary = self.module(".".join(parts[:split]))
            if summary is None:
                continue
            name, rest = parts[split], parts[split + 1:]
            typed = summary.exports.get(name)
            if typed is None and rest:
                # ``get_model().ainvoke`` / ``self.make_client().chat...``: a call on what a project
                # function or method returns (the longest function name that has a known return type).
                for length in range(len(rest), -1, -1):
                    function = summary.functions.get(".".join([name, *rest[:length]]))
                    if function is not None and function.returns and rest[length:]:
                        typed, rest = function.returns, rest[length:]
                        break
            if typed is not None:
                return ".".join([typed, *rest])
            target = summary.aliases.get(name)
            if target is not None:
                return self.exported_call(".".join([target, *rest]), depth + 1)
            return None
        return None

    def _canonical_type(self, qualname: str) -> str:
        """``azure...BlobServiceClient.get_container_client.upload_blob`` -> ``azure...ContainerClient.upload_blob``:
        the ``type_aliases`` the collector applies to names it resolves, applied to a name built at resolution
        (a method called on what a project function returns)."""
        aliases = self.ctx.type_aliases
        parts = qualname.split(".")
        for _ in range(_MAX_ALIAS_DEPTH):
            for end in range(1, len(parts)):
                prefix = ".".join(parts[:end + 1])
                if prefix in aliases:
                    parts = [*aliases[prefix].split("."), *parts[end + 1:]]
                    break
            else:
                break
        return ".".join(parts)

    def container_mutation(self, site: CallSite) -> Effect | None:
        """``EVENTS.append(x)`` where ``EVENTS`` is a module-level container of another module, or
        ``Stats.runs += 1`` where ``Stats`` is a class of another module."""
        owner, _, method = site.target.rpartition(".")
        module_name, _, name = owner.rpartition(".")
        if not module_name or not (method in MUTATING_METHODS or method in _ITEM_WRITES or method == "__setattr__"):
            return None
        summary = self.module(module_name)
        if summary is None:
            return None
        if method == "__setattr__":
            if name not in summary.classes:
                return None
        elif name not in summary.containers:
            return None
        rule = self.ctx.by_category.get("global-state")
        if rule is None:
            return None
        if method == "__setattr__":
            subject = site.subject
        elif method in _ITEM_WRITES:
            subject = _ITEM_WRITES[method].format(name=name)
        else:
            subject = f"{name}.{method}()"
        return Effect(rule.code, rule.category, subject, site.target, site.span)

    def _iterated_result(self, site: CallSite, profile: FrameworkProfile) -> list[Reached]:
        """``for x in helper():`` where the project function ``helper`` returns a set (the call site's
        subject is the finding's, worded by the rule that recorded it)."""
        found = self.find_function(site.target[: -len(".__iter__")])
        rule = self.ctx.by_category.get("iteration-order")
        if found is None or found[1].returns != "builtins.set" or rule is None:
            return []
        effect = Effect(rule.code, rule.category, site.subject, "builtins.set",
                        site.span)
        return [Reached(effect, (effect.qualname,))] if self.applies(effect, profile) else []

    # --- reachability -----------------------------------------------------------------------

    def applies(self, effect: Effect, profile: FrameworkProfile) -> bool:
        if effect.frameworks and profile.name not in effect.frameworks:
            return False
        if effect.qualname in profile.safe_calls:
            return False
        if effect.log_only and effect.category in profile.log_only_harmless:
            return False  # the value only fills a log line, and this engine lets the read run
        if effect.flows and self.names_child_only(effect.flows, profile):
            return False
        rule = self.ctx.rules.get(effect.rule)
        return rule is None or rule.applies_to(effect, profile)

    def names_child_only(self, flows: tuple[str, ...], profile: FrameworkProfile) -> bool:
        """Whether every place a fresh value goes names a child run of this framework (``lint.value_flows``):
        a child scope's argument, or a project function's parameter used only so."""
        if not flows:
            return False
        child = f"child:{profile.name}"
        for flow in flows:
            if flow == child:
                continue
            if not flow.startswith("param:"):
                return False
            target, _, argument = flow[6:].rpartition(":")
            found = self.find_function(target)
            if found is None or not any(
                    entry.endswith(f":{profile.name}") and argument in (entry.split(":", 1)[0], f"#{entry.split(':')[1]}")
                    for entry in found[1].child_params):
                return False
        return True

    def _through(self, site: CallSite, reached: list[Reached], profile: FrameworkProfile) -> list[Reached]:
        """What a call site reaches of what its callee reaches: guards the call cannot satisfy dropped and the
        rest in the caller's terms (``lint.guards``); where a returned fresh value goes replaced by where the
        call's result goes, and values that then only name a child run dropped (``lint.value_flows``)."""
        out = []
        for item in reached:
            when = apply_guards(item.when, site)
            if when is None:
                continue
            flows = item.flows
            if flows and RETURN in flows:
                flows = () if not site.flows else tuple(dict.fromkeys(
                    part for flow in flows for part in (site.flows if flow == RETURN else (flow,))))
                if flows and self.names_child_only(flows, profile):
                    continue
            if when != item.when or flows != item.flows:
                item = Reached(item.effect, item.chain, item.unless_given, when, flows)
            out.append(item)
        return out

    def call_effects(self, site: CallSite, profile: FrameworkProfile) -> tuple[list[Reached], bool]:
        """What a call site reaches: (reached effects, whether the call itself is the effect)."""
        reached, direct, _ = self._call(site, profile)
        return reached, direct

    def reach(self, summary: ModuleSummary, function: FunctionSummary, profile: FrameworkProfile) -> list[Reached]:
        """Everything a function reaches (complete: never a partial result of a cycle in progress)."""
        return self._reach(summary, function, profile)[0]

    def _call(self, site: CallSite, profile: FrameworkProfile) -> tuple[list[Reached], bool, int]:
        """``call_effects`` plus the lowest walk depth the result depends on (``_DONE`` when complete)."""
        if site.target in profile.safe_calls:
            return [], False, _DONE
        if site.target.endswith(".__iter__"):
            return self._iterated_result(site, profile), True, _DONE
        found = self.find_function(site.target)
        if found is not None:
            summary, function = found
            if function.kind in (STEP, ORCHESTRATION):
                return [], False, _DONE
            reached, low = self._reach(summary, function, profile)
            return self._through(site, _without_given_fields(reached, site), profile), False, low
        mutation = self.container_mutation(site)
        if mutation is not None:
            return ([Reached(mutation, (mutation.qualname,))] if self.applies(mutation, profile) else []), True, _DONE
        typed = self.exported_call(site.target)
        if typed is None:
            return [], False, _DONE
        for _ in range(_MAX_ALIAS_DEPTH):  # a factory returning what another factory returns
            further = self.exported_call(typed)
            if further is None or further == typed:
                break
            typed = further
        typed = self._canonical_type(typed)
        found = self.find_function(typed)  # a method of a project class, through an exported instance
        if found is not None:
            summary, function = found
            if function.kind in (STEP, ORCHESTRATION):
                return [], False, _DONE
            reached, low = self._reach(summary, function, profile)
            return self._through(site, reached, profile), False, low
        rule = self.ctx.match_call(typed)
        if rule is None:
            return [], False, _DONE
        effect = Effect(rule.code, rule.category, site.subject, typed, site.span)
        return ([Reached(effect, (typed,))] if self.applies(effect, profile) else []), True, _DONE

    def _reach(
        self, summary: ModuleSummary, function: FunctionSummary, profile: FrameworkProfile
    ) -> tuple[list[Reached], int]:
        """The walk, depth-first with Tarjan's low-link: a function inside a cycle that is still being
        walked (``b`` in ``a -> b -> a`` while ``a`` is in progress) gets a result lacking what the
        cycle's first function adds. Such results are kept only until that function completes (so a
        dense cycle is not walked again and again); only complete results are memoised for good, so a
        finding never depends on which entry point was resolved first."""
        name = f"{summary.module}.{function.name}"
        key = (name, profile.name)
        memo = self._memo.get(key)
        if memo is not None:
            return memo, _DONE
        partial = self._partial.get(key)
        if partial is not None:
            return partial
        depth = self._active.get(key)
        if depth is not None:
            return [], depth
        depth = len(self._active)
        self._active[key] = depth
        low = _DONE
        try:
            reached: list[Reached] = []
            # One item per hazard line (the same call at two lines of a helper is two lines to fix), each
            # reached once whichever path leads to it.
            # A hazard reached again by another path stays reachable when either path reaches it: the paths'
            # common guards and, for where its value goes, both places (anywhere when either is).
            seen: dict[tuple[str, str, bool, str, int, int], int] = {}
            for effect in function.effects:
                identity = (effect.rule, effect.qualname, effect.gathered_only, name, effect.span.line,
                            effect.span.column)
                if self.applies(effect, profile) and identity not in seen:
                    seen[identity] = len(reached)
                    reached.append(Reached(effect, (name, effect.qualname), when=effect.when, flows=effect.flows))
            for site in function.calls:
                below, _, below_low = self._call(site, profile)
                low = min(low, below_low)
                for item in below:
                    effect = item.effect
                    if effect.gathered_only and site.gathered:
                        effect = replace(effect, gathered_only=False)  # this call runs it in a gathered coroutine
                    holder = item.chain[-2] if len(item.chain) >= 2 else name
                    identity = (effect.rule, effect.qualname, effect.gathered_only, holder, effect.span.line,
                                effect.span.column)
                    index = seen.get(identity)
                    if index is not None:
                        first = reached[index]
                        if first.when or first.flows:
                            flows = () if not first.flows or not item.flows else tuple(
                                dict.fromkeys((*first.flows, *item.flows)))
                            reached[index] = replace(first, when=common_guards(first.when, item.when), flows=flows)
                        continue
                    seen[identity] = len(reached)
                    reached.append(Reached(effect, (name, *item.chain), site.unless_given, item.when, item.flows))
        finally:
            del self._active[key]
        if low >= depth:
            # Complete: this function is the first of its cycle (or in none); the partial results of
            # the cycle's other members are superseded.
            self._memo[key] = reached
            if self._partial:
                self._partial = {k: v for k, v in self._partial.items() if v[1] < depth}
            return reached, _DONE
        # Results that depended on this function now depend on what it depends on.
        self._partial = {k: (v[0], min(v[1], low)) for k, v in self._partial.items()}
        self._partial[key] = (reached, low)
        return reached, low


def _without_given_fields(reached: list[Reached], site: CallSite) -> list[Reached]:
    """Drop default factories of fields this constructor call passes (they do not run)."""
    return [
        item for item in reached
        if not (len(item.chain) == 2 and item.effect.unless_given and site.passes(item.effect.unless_given))
        and not (item.unless_given and site.passes(item.unless_given))
    ]
