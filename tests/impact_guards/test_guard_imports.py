"""A guard's old branch gets back the imports the change removed (``guard_imports.carry_imports``): merged
into an import from the same module, else added where the base file had it, and nothing when every name is
still bound. Expected texts are written by hand."""

from __future__ import annotations

import textwrap

import libcst as cst

from replaytest.impact.guard_imports import carry_imports, unbound_names


def _carried(guarded: str, base: str) -> str:
    return carry_imports(cst.parse_module(textwrap.dedent(guarded)), cst.parse_module(textwrap.dedent(base))).code


BASE_SANDBOXED = '''\
    from temporalio import workflow

    with workflow.unsafe.imports_passed_through():
        from shop.activities import charge_card

    @workflow.defn
    class Checkout:
        @workflow.run
        async def run(self) -> None:
            await workflow.execute_activity(charge_card)
    '''


def test_a_name_dropped_from_an_import_is_merged_back_into_it() -> None:
    guarded = '''\
    from temporalio import workflow

    with workflow.unsafe.imports_passed_through():
        from shop.activities import charge_wallet

    @workflow.defn
    class Checkout:
        @workflow.run
        async def run(self) -> None:
            if workflow.patched("wallet"):
                await workflow.execute_activity(charge_wallet)
            else:
                await workflow.execute_activity(charge_card)
    '''
    assert "from shop.activities import charge_wallet, charge_card\n" in _carried(guarded, BASE_SANDBOXED)


def test_an_import_the_file_no_longer_has_goes_back_into_its_block() -> None:
    guarded = '''\
    from temporalio import workflow

    with workflow.unsafe.imports_passed_through():
        from shop.wallet import charge_wallet

    @workflow.defn
    class Checkout:
        @workflow.run
        async def run(self) -> None:
            if workflow.patched("wallet"):
                await workflow.execute_activity(charge_wallet)
            else:
                await workflow.execute_activity(charge_card)
    '''
    expected_block = (
        "with workflow.unsafe.imports_passed_through():\n"
        "    from shop.wallet import charge_wallet\n"
        "    from shop.activities import charge_card\n"
    )
    assert expected_block in _carried(guarded, BASE_SANDBOXED)


def test_a_top_level_import_goes_after_the_last_import() -> None:
    base = '''\
    import json
    from billing import refund as pay_back

    def agent(ctx, order):
        return ctx.step("refund", pay_back, json.dumps(order))
    '''
    guarded = '''\
    import json

    def agent(ctx, order):
        if ctx.patched("store-credit"):
            return ctx.step("credit", print, json.dumps(order))
        return ctx.step("refund", pay_back, json.dumps(order))
    '''
    assert _carried(guarded, base).startswith("import json\nfrom billing import refund as pay_back\n\ndef agent")


def test_nothing_changes_when_every_name_is_bound() -> None:
    guarded = '''\
    import json

    def agent(ctx, order):
        if ctx.patched("x"):
            return ctx.step("a", len, json.dumps(order))
        return ctx.step("b", print, order)
    '''
    assert _carried(guarded, "import json\n") == textwrap.dedent(guarded)


def test_unbound_names_ignore_builtins_attributes_and_locals() -> None:
    module = cst.parse_module("import os\n\ndef f(x):\n    y = len(x)\n    return os.path.join(y, missing)\n")
    assert unbound_names(module) == {"missing"}
