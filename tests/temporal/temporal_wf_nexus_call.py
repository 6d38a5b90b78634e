"""A workflow (type ``Quote``) that calls a Nexus operation (``Pricing.price``, a synchronous handler in the
same worker, reached through a Nexus endpoint targeting the worker's task queue) between two timers, and
changed versions of it, for the tests of Nexus operations. The tests name the lines of this file, so keep
them where they are (new code goes at the end)."""

from __future__ import annotations

import nexusrpc
import nexusrpc.handler
from temporalio import workflow

ENDPOINT = "pricing-endpoint"
# The items the handler priced, one per call: a replay must add none.
HANDLED: list[str] = []


@nexusrpc.service(name="Pricing")
class Pricing:
    price: nexusrpc.Operation[str, int]
    discount: nexusrpc.Operation[str, int]


@nexusrpc.handler.service_handler(service=Pricing)
class PricingHandler:
    @nexusrpc.handler.sync_operation
    async def price(self, ctx: nexusrpc.handler.StartOperationContext, item: str) -> int:
        HANDLED.append(item)
        return 10 * len(item)

    @nexusrpc.handler.sync_operation
    async def discount(self, ctx: nexusrpc.handler.StartOperationContext, item: str) -> int:
        return len(item)


@workflow.defn(name="Quote")
class Quote:
    @workflow.run
    async def run(self, item: str) -> int:
        await workflow.sleep(0.05)
        pricing = workflow.create_nexus_client(service=Pricing, endpoint=ENDPOINT)
        price = await pricing.execute_operation(Pricing.price, item)
        await workflow.sleep(0.05)
        return price


@workflow.defn(name="Quote")
class QuoteOtherOperation:
    @workflow.run
    async def run(self, item: str) -> int:
        await workflow.sleep(0.05)
        pricing = workflow.create_nexus_client(service=Pricing, endpoint=ENDPOINT)
        price = await pricing.execute_operation(Pricing.discount, item)
        await workflow.sleep(0.05)
        return price


@workflow.defn(name="Quote")
class QuoteWithoutOperation:
    @workflow.run
    async def run(self, item: str) -> int:
        await workflow.sleep(0.05)
        await workflow.sleep(0.05)
        return 10 * len(item)


@workflow.defn(name="Quote")
class QuoteOperationFirst:
    @workflow.run
    async def run(self, item: str) -> int:
        pricing = workflow.create_nexus_client(service=Pricing, endpoint=ENDPOINT)
        price = await pricing.execute_operation(Pricing.price, item)
        await workflow.sleep(0.05)
        await workflow.sleep(0.05)
        return price


@workflow.defn(name="Quote")
class QuoteOtherInput:
    @workflow.run
    async def run(self, item: str) -> int:
        await workflow.sleep(0.05)
        pricing = workflow.create_nexus_client(service=Pricing, endpoint=ENDPOINT)
        price = await pricing.execute_operation(Pricing.price, item.upper() + "!")
        await workflow.sleep(0.05)
        return price
