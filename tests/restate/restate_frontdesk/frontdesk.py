"""A hotel front desk on Restate, for the context calls the order desk and the left-luggage desk do not
make: a guest notes the time of arrival through ``ctx.time()`` and waits for a
named signal (``ctx.signal``) that a concierge resolves (``ctx.resolve_signal``) or rejects
(``ctx.reject_signal``) from another invocation; and a call made within a scope (``ctx.scope``), which
the server journals only with its experimental flow control on. Served as ``app``."""

from __future__ import annotations

from datetime import timedelta

import restate

guest = restate.Service("guest", inactivity_timeout=timedelta(seconds=1))
concierge = restate.Service("concierge")


@concierge.handler()
async def ring(ctx: restate.Context, room: str) -> str:
    return f"rang {room}"


@guest.handler()
async def check_in(ctx: restate.Context, name: str) -> str:
    arrived = await ctx.time()
    try:
        room = await ctx.signal("room", type_hint=str)
    except restate.TerminalError as refusal:
        return f"{name} turned away: {refusal.message}"
    rang = await ctx.service_call(ring, arg=room)
    return f"{name} in {room} ({rang}, arrived {arrived > 0})"


@concierge.handler()
async def give_room(ctx: restate.Context, request: dict) -> str:
    ctx.resolve_signal(request["invocation"], "room", request["room"])
    return "given"


@concierge.handler()
async def refuse_room(ctx: restate.Context, request: dict) -> str:
    ctx.reject_signal(request["invocation"], "room", "fully booked")
    return "refused"


@concierge.handler()
async def ring_for_tenant(ctx: restate.Context, tenant: str) -> str:
    return await ctx.scope(tenant).service_call(ring, arg="the suite")


app = restate.app(services=[guest, concierge])
