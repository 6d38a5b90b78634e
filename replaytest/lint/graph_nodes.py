"""Graph nodes' re-run regions: what a node reaches before its last pause, which runs again on resume.

A framework that resumes a paused graph thread re-runs the paused node from its top (LangGraph does, for
a node that called ``interrupt()``). A module summary lists the functions it adds to a graph as nodes
(``ModuleSummary.graph_nodes``); each function summary lists its pause calls and the loops holding one.
Here, on summaries alone, each node's re-run region is found — the code up to the end of its last pause,
or of the last loop holding one, in source order — and the effects that region reaches: its own effects
and those of the helpers it calls there (walked with ``Program``, so steps stop the walk as everywhere).
A helper that pauses (directly or deeper) pauses the node at its call; then only that helper's own region
counts. A tool run through a lookup (``tools_by_name[name].invoke(args)``) reaches what the tools the lookup
can name reach (``lint.tool_lookups``); a lookup that cannot be resolved reaches nothing. A tool taken from
the run's config (``config["configurable"]["tools_by_name"][name].ainvoke(args)``), in the node or in a helper
it calls (given the config, or a value from it, as an argument), cannot be resolved at all: running it is
the hazard (a tool exists to act), reported as an effect of category ``CONFIG_TOOL``. Which effects are
findings, and their wording, is the rule's (``RT205.repeats``).
"""

from __future__ import annotations

from collections.abc import Callable

from replaytest.lint.model import ORCHESTRATION, STEP, CallSite, Effect, FunctionSummary, GraphNode, ModuleSummary, Span
from replaytest.lint.profile import FrameworkProfile
from replaytest.lint.resolve import Program, Reached
from replaytest.lint.tool_lookups import CONFIG_ITEM, CONFIG_TOOL, PARAMETER, ToolSets, is_config_tool
from replaytest.records import FrozenRecord

_MAX_HELPER_DEPTH = 16
# How deep helpers given a value from the config are followed to the tool they run.
_MAX_CONFIG_DEPTH = 4


class Pause(FrozenRecord):
    """Where a function pauses: an ``interrupt()`` call, or a call of a helper that pauses."""

    span: Span
    text: str  # "interrupt()" or "ask_reviewer(), which calls interrupt()"

    def __init__(self, span: Span, text: str) -> None:
        self.__dict__.update(span=span, text=text)


# (where in the function, the effect, the helper call reaching it, the chain, the others behind that call,
# whether that call runs tools through a lookup)
Region = tuple[Span, Effect, str | None, tuple[str, ...], tuple[Reached, ...], bool]


class RerunFinding(FrozenRecord):
    """An effect in a node's re-run region, at ``span`` of the node function (``via``: the helper call
    through which it is reached, with ``chain`` the qualified names down to it)."""

    node: GraphNode
    registered_in: ModuleSummary
    summary: ModuleSummary  # the node function's module
    function: FunctionSummary
    effect: Effect
    span: Span
    pause: Pause
    via: str | None = None
    chain: tuple[str, ...] = ()
    in_loop: bool = False  # after the last pause, in a loop whose next turn pauses again
    # The other effects of the same rule behind the same helper call (chains from the node function, as
    # ``chain``): one finding stands for them all, and names each of their lines.
    others: tuple[Reached, ...] = ()
    # ``via`` runs tools through a lookup (``tools_by_name[name].invoke(args)``): the hazard is running a tool
    # there, so each such call is a finding of its own (a helper's hazard reached from several calls is one).
    through_lookup: bool = False

    def __init__(
        self, node: GraphNode, registered_in: ModuleSummary, summary: ModuleSummary, function: FunctionSummary,
        effect: Effect, span: Span, pause: Pause, via: str | None = None, chain: tuple[str, ...] = (),
        in_loop: bool = False, others: tuple[Reached, ...] = (), through_lookup: bool = False,
    ) -> None:
        self.__dict__.update(node=node, registered_in=registered_in, summary=summary, function=function,
            effect=effect, span=span, pause=pause, via=via, chain=chain, in_loop=in_loop, others=others,
            through_lookup=through_lookup)


class RerunRegions:
    def __init__(
        self, program: Program, profiles: dict[str, FrameworkProfile], repeats: Callable[[Effect], bool],
        code: str = "RT205",
    ) -> None:
        self.program = program
        self.profiles = profiles
        self.repeats = repeats  # whether running an effect again is a finding (the rule decides)
        self.code = code  # the rule's, for the effects made here (running a tool from the config)
        self._pauses: dict[str, list[Pause]] = {}
        self._config_memo: dict[tuple[str, tuple[tuple[str, str], ...], int], list[tuple[Effect, tuple[str, ...]]]] = {}
        self.tool_sets = ToolSets(program)

    def findings(self) -> list[RerunFinding]:
        """Every node of every summary the program holds, each function once (its first registration)."""
        summaries = list({id(s): s for s in self.program.modules.values()}.values())
        seen: set[str] = set()
        found: list[RerunFinding] = []
        for summary in summaries:
            for node in summary.graph_nodes:
                profile = self.profiles.get(node.framework)
                located = self.program.find_function(node.target)
                if profile is None or located is None or located[1].kind in (STEP, ORCHESTRATION):
                    continue
                name = f"{located[0].module}.{located[1].name}"
                if name in seen:
                    continue
                seen.add(name)
                found.extend(self._node_findings(node, summary, located[0], located[1], profile))
        return found

    # --- pauses -------------------------------------------------------------------------------

    def pauses(self, summary: ModuleSummary, function: FunctionSummary, depth: int = 0) -> list[Pause]:
        """The function's pauses: its pause calls, and calls of project helpers that pause."""
        name = f"{summary.module}.{function.name}"
        memo = self._pauses.get(name)
        if memo is not None:
            return memo
        self._pauses[name] = []  # a recursive helper does not pause through itself
        pause_word = self._pause_word()
        found = [Pause(span, pause_word) for span in function.pauses]
        if depth < _MAX_HELPER_DEPTH:
            for site in function.calls:
                callee = self._helper(site)
                if callee is not None and self.pauses(*callee, depth + 1):
                    found.append(Pause(site.span, f"{site.subject}, which calls {pause_word}"))
        self._pauses[name] = found
        return found

    def _pause_word(self) -> str:
        names = sorted({name for profile in self.profiles.values() for name in profile.pause_calls})
        return f"{names[0].rsplit('.', 1)[-1]}()" if names else "the pause"

    def _helper(self, site: CallSite) -> tuple[ModuleSummary, FunctionSummary] | None:
        located = self.program.find_function(site.target)
        if located is None or located[1].kind in (STEP, ORCHESTRATION):
            return None
        return located

    # --- regions ------------------------------------------------------------------------------

    def _node_findings(
        self, node: GraphNode, registered_in: ModuleSummary, summary: ModuleSummary, function: FunctionSummary,
        profile: FrameworkProfile,
    ) -> list[RerunFinding]:
        pauses = self.pauses(summary, function)
        if not pauses:
            return []
        last = max(pauses, key=lambda pause: (pause.span.end_line, pause.span.end_column))
        loop_word = f"{self._pause_word()} again in the next turn of the loop"
        findings = []
        for span, effect, via, chain, others, through_lookup in self._region(summary, function, profile, pauses, 0):
            pause, in_loop = last, False
            if not _before(span, (last.span.end_line, last.span.end_column)):
                # After the last pause, inside a loop holding one: the next turn pauses again.
                loop = min((loop for loop in function.pause_loops if _within(span, loop)), default=None,
                           key=lambda loop: (loop.end_line - loop.line))
                if loop is not None:
                    pause, in_loop = Pause(loop, loop_word), True
            findings.append(
                RerunFinding(node, registered_in, summary, function, effect, span, pause, via, chain, in_loop, others,
                             through_lookup))
        return findings

    def _region(
        self, summary: ModuleSummary, function: FunctionSummary, profile: FrameworkProfile, pauses: list[Pause],
        depth: int,
    ) -> list[Region]:
        """(where in ``function``, the effect, the helper call reaching it, the chain, the other effects of its
        rule behind that call) for each effect that runs before the function's last pause (one per rule at a
        helper call)."""
        ends = [(p.span.end_line, p.span.end_column) for p in pauses]
        ends += [(loop.end_line, loop.end_column) for loop in function.pause_loops]
        cutoff = max(ends)
        pausing_sites = {(p.span.line, p.span.column) for p in pauses} - {(s.line, s.column) for s in function.pauses}
        name = f"{summary.module}.{function.name}"
        found: list[Region] = []
        for effect in function.effects:
            if _before(effect.span, cutoff) and self._counts(effect, profile):
                found.append((effect.span, effect, None, (name, effect.qualname), (), False))
        for site in function.calls:
            if not _before(site.span, cutoff):
                continue
            if (site.span.line, site.span.column) in pausing_sites and depth < _MAX_HELPER_DEPTH:
                callee = self._helper(site)
                if callee is None:
                    continue
                inner = self._region(*callee, profile, self.pauses(*callee), depth + 1)
                reached = [Reached(other.effect, other.chain)
                           for _, effect, _, chain, others, _ in inner for other in (Reached(effect, chain), *others)]
                direct = False
            else:
                reached, direct = self.program.call_effects(site, profile)
            by_rule: dict[str, list[Reached]] = {}
            for item in reached:
                if self._counts(item.effect, profile):
                    by_rule.setdefault(item.effect.rule, []).append(item)
            for items in by_rule.values():
                item = items[0]
                if direct:
                    found.append((site.span, item.effect, None, (name, item.effect.qualname), (), False))
                else:
                    others = tuple(Reached(other.effect, (name, *other.chain)) for other in items[1:])
                    found.append((site.span, item.effect, site.subject, (name, *item.chain), others, False))
        for site in function.lookups:
            if _before(site.span, cutoff):
                found.extend(self._lookup_region(name, site, profile))
        for origin, site in function.config_tools:
            if is_config_tool(origin) and _before(site.span, cutoff):
                effect = self._config_effect(site, origin)
                found.append((site.span, effect, None, (name, effect.qualname), (), True))
        for site in function.calls:
            if _before(site.span, cutoff) and (site.span.line, site.span.column) not in pausing_sites:
                for effect, chain in self._config_tools_behind(site, 0, set()):
                    found.append((site.span, effect, site.subject, (name, *chain), (), True))
        return found

    def _config_effect(self, site: CallSite, origin: str) -> Effect:
        """Running a tool taken from the config at ``site`` (``origin``: where the tool came from)."""
        key = origin[len(CONFIG_ITEM):] if origin.startswith(CONFIG_ITEM) else ""
        return Effect(self.code, CONFIG_TOOL, site.subject, f"config.configurable.{key or '...'}", site.span,
                      args=key)

    def _config_tools_behind(
        self, site: CallSite, depth: int, seen: set[str],
    ) -> list[tuple[Effect, tuple[str, ...]]]:
        """The tools taken from the config that the helper ``site`` calls runs (or the helpers it calls, given a
        value from the config), each with the chain of qualified names from the helper down to it."""
        if depth > _MAX_CONFIG_DEPTH:
            return []
        key = (site.target, site.config_args, depth)
        memo = self._config_memo.get(key)
        if memo is None:
            memo = self._config_memo[key] = self._walk_config_tools(site, depth, seen)
        return memo

    def _walk_config_tools(
        self, site: CallSite, depth: int, seen: set[str],
    ) -> list[tuple[Effect, tuple[str, ...]]]:
        callee = self._helper(site)
        if callee is None:
            return []
        summary, function = callee
        name = f"{summary.module}.{function.name}"
        if name in seen:
            return []
        seen = seen | {name}
        fed = dict(site.config_args)  # slot -> origin of the value passed there
        found: list[tuple[Effect, tuple[str, ...]]] = []
        for origin, run in function.config_tools:
            if origin.startswith(PARAMETER):
                # The tool came from a parameter: the config's when this call passes a value from it there.
                parameter, _, position = origin[len(PARAMETER):].rpartition(":")
                given = fed.get(parameter) or (fed.get(f"#{position}") if position != "-1" else None)
                if given is None:
                    continue
                origin = given if is_config_tool(given) else CONFIG_ITEM
            if is_config_tool(origin):
                effect = self._config_effect(run, origin)
                found.append((effect, (name, effect.qualname)))
        for inner in function.calls:
            for effect, chain in self._config_tools_behind(inner, depth + 1, seen):
                found.append((effect, (name, *chain)))
        return found

    def _lookup_region(self, name: str, site: CallSite, profile: FrameworkProfile) -> list[Region]:
        """What a tool run through a lookup reaches: the effects of the tools the looked-up collection can
        hold (one entry per rule, naming the first tool reaching it; the others are its "also at")."""
        tools = self.tool_sets.members(site.target) or ()
        by_rule: dict[str, list[tuple[str, Reached]]] = {}
        for tool in tools:
            located = self.program.find_function(tool)
            if located is None or located[1].name.rsplit(".", 1)[-1] != tool.rsplit(".", 1)[-1]:
                continue  # a class (its ``__init__`` is not what ``.run()`` on it runs) or nothing known
            reached, _ = self.program.call_effects(CallSite(tool, site.span, site.subject), profile)
            for item in reached:
                if self._counts(item.effect, profile):
                    by_rule.setdefault(item.effect.rule, []).append((tool, item))
        found: list[Region] = []
        holder = site.target.rsplit(".", 1)[-1]
        for items in by_rule.values():
            tool, item = items[0]
            named = list(dict.fromkeys(t.rsplit(".", 1)[-1] for t, _ in items))
            tools_named = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} or {named[-1]}"
            via = f"{site.subject} (which may run {tools_named} from {holder})"
            others = tuple(Reached(other.effect, (name, *other.chain)) for _, other in items[1:])
            found.append((site.span, item.effect, via, (name, *item.chain), others, True))
        return found

    def _counts(self, effect: Effect, profile: FrameworkProfile) -> bool:
        return not effect.gathered_only and self.repeats(effect) and self.program.applies(effect, profile)


def _before(span: Span, cutoff: tuple[int, int]) -> bool:
    return (span.line, span.column) < cutoff


def _within(span: Span, outer: Span) -> bool:
    return (outer.line, outer.column) <= (span.line, span.column) < (outer.end_line, outer.end_column)
