"""The order desk: a service whose handler takes steps, calls a pricing service, keeps a virtual object's
state and waits on an awakeable for a clerk's approval. ``RESTATE_SHOP_MARKER`` names a file every step
body appends its name to, which lets the tests prove that replay runs no step body."""

from __future__ import annotations

import os
from datetime import timedelta

import restate

pricing = restate.Service("pricing")
ledger = restate.VirtualObject("ledger")
# A short inactivity timeout: an invocation waiting for its approval suspends at once instead of after a minute.
orders = restate.Service("orders", inactivity_timeout=timedelta(seconds=1))
# The recording turns this service's journal retention off through the admin API (SDKs before 1.3 cannot
# declare it): its completed invocations keep no journal, which import must say.
receipts = restate.Service("receipts")


def _mark(step: str) -> None:
    marker = os.environ.get("RESTATE_SHOP_MARKER")
    if marker:
        with open(marker, "a", encoding="utf-8") as handle:
            handle.write(step + "\n")


@pricing.handler()
async def quote(ctx: restate.Context, item: str) -> int:
    return 10 * len(item)


@ledger.handler()
async def add(ctx: restate.ObjectContext, amount: int) -> int:
    total = await ctx.get("total", type_hint=int) or 0
    total += amount
    ctx.set("total", total)
    return total


def reserve_stock(item: str) -> str:
    _mark("reserve")
    return f"reserved {item}"


def charge_card(amount: int) -> str:
    _mark("charge")
    return f"charged {amount}"


@orders.handler()
async def place(ctx: restate.Context, order: dict) -> dict:
    item = order["item"]
    reservation = await ctx.run_typed("reserve", reserve_stock, item=item)
    price = await ctx.service_call(quote, arg=item)
    receipt = await ctx.run_typed("charge", charge_card, amount=price)
    total = await ctx.object_call(add, key=order["customer"], arg=price)
    if order.get("approval"):
        approval_id, approval = ctx.awakeable(type_hint=str)
        await ctx.run_typed("announce", lambda: _mark("announce") or approval_id)
        verdict = await approval
    else:
        verdict = "auto"
    return {"reservation": reservation, "receipt": receipt, "total": total, "verdict": verdict}


@orders.handler()
async def cancel(ctx: restate.Context, order: dict) -> dict:
    await ctx.sleep(timedelta(milliseconds=50))
    ctx.service_send(quote, arg=order["item"])
    await ctx.run_typed("look up", reserve_stock, item=order["item"])
    raise restate.TerminalError(f"order for {order['item']} cannot be cancelled", status_code=409)


def call_supplier(item: str) -> str:
    _mark("supplier")
    raise ConnectionError(f"the supplier of {item} does not answer")


@orders.handler()
async def restock(ctx: restate.Context, order: dict) -> str:
    """Retried by Restate for as long as the supplier fails: its journal holds the step without a result."""
    await ctx.run_typed("reserve", reserve_stock, item=order["item"])
    return await ctx.run_typed("call supplier", call_supplier, item=order["item"])


# A workflow that waits on a durable promise its shared handler resolves.
signup = restate.Workflow("signup", inactivity_timeout=timedelta(seconds=1))


def send_mail(address: str) -> str:
    _mark("mail")
    return f"mail sent to {address}"


@signup.main()
async def register(ctx: restate.WorkflowContext, address: str) -> str:
    await ctx.run_typed("send mail", send_mail, address=address)
    code = await ctx.promise("confirmation", type_hint=str).value()
    ctx.set("status", "confirmed")
    return f"{address} confirmed with {code}"


@signup.handler()
async def confirm(ctx: restate.WorkflowSharedContext, code: str) -> None:
    await ctx.promise("confirmation", type_hint=str).resolve(code)


@receipts.handler()
async def issue(ctx: restate.Context, amount: int) -> str:
    return await ctx.run_typed("print", charge_card, amount=amount)


# A draw whose step names and branch come from the invocation's seeded random (``ctx.random()``, ``ctx.uuid()``):
# it replays green only if replay seeds the SDK's random as the server's invocation did.
lottery = restate.Service("lottery")


@lottery.handler()
async def draw(ctx: restate.Context, player: str) -> dict:
    number = ctx.random().randint(1, 1_000_000)
    ticket = str(ctx.uuid())
    await ctx.run_typed(f"ticket {ticket}", lambda: _mark("ticket") or player)
    if number % 2:
        prize = await ctx.run_typed(f"odd prize {number}", lambda: _mark("prize") or "mug")
    else:
        prize = await ctx.run_typed(f"even prize {number}", lambda: _mark("prize") or "pen")
    return {"number": number, "ticket": ticket, "prize": prize}


app = restate.app(services=[pricing, ledger, orders, receipts, signup, lottery])
