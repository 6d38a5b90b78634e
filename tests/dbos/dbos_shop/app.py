"""The order workflow: steps, a datasource transaction, a durable sleep, a child workflow, messages, a
patch and a failing step. ``EFFECTS`` (a file named by ``SHOP_EFFECTS``) gets a line every time a step
body really runs, so tests can assert that replay runs none."""

from __future__ import annotations

import os
import tempfile
from fractions import Fraction

import sqlalchemy as sa
from dbos import DBOS, DBOSConfiguredInstance, SQLAlchemyDatasource

from dbos_shop.models import Carrier, Parcel

# Defaults outside the working directory: a test that imports the app without setting these (a replay in a
# child process, say) must not leave a database or a log in the checkout.
APP_DATABASE_URL = os.environ.get("SHOP_APP_DB", f"sqlite:///{os.path.join(tempfile.gettempdir(), 'shop-app.sqlite3')}")
EFFECTS = os.environ.get("SHOP_EFFECTS", os.path.join(tempfile.gettempdir(), "shop-effects.log"))

orders_db = SQLAlchemyDatasource.create(APP_DATABASE_URL)


def effect(what: str) -> None:
    with open(EFFECTS, "a", encoding="utf-8") as log:
        log.write(what + "\n")


class PaymentDeclined(Exception):
    """Raised by the card step for amounts over the limit."""


@DBOS.step()
def reserve_stock(item: str, quantity: int) -> dict:
    effect(f"reserve {item}")
    return {"item": item, "reserved": quantity}


@DBOS.step()
def charge_card(order_id: str, amount: float) -> str:
    effect(f"charge {order_id}")
    if amount > 100:
        raise PaymentDeclined(f"card declined for {amount}")
    return f"charge-{order_id}"


@orders_db.transaction()
def save_order(order_id: str, status: str) -> int:
    effect(f"save {order_id}")
    session = orders_db.sql_session()
    session.execute(sa.text("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, status TEXT)"))
    # An upsert both SQLite and Postgres run: the shop records on either.
    upsert = "INSERT INTO orders VALUES (:id, :status) ON CONFLICT (id) DO UPDATE SET status = excluded.status"
    session.execute(sa.text(upsert), {"id": order_id, "status": status})
    return 1


@DBOS.step()
def send_receipt(order_id: str) -> str:
    effect(f"receipt {order_id}")
    return f"receipt for {order_id}"


@DBOS.workflow()
def ship(order_id: str) -> str:
    label = reserve_stock(f"label-{order_id}", 1)
    return f"shipped {order_id} with {label['item']}"


@DBOS.workflow()
def place_order(order_id: str, amount: float, wait_s: float) -> dict:
    stock = reserve_stock("book", 2)
    try:
        payment = charge_card(order_id, amount)
    except Exception as declined:  # a portable-JSON run gets DBOS's PortableWorkflowError back on recovery
        payment = f"declined: {declined}"
    save_order(order_id, "paid")
    DBOS.sleep(0.1)
    shipping = ship(order_id)
    if DBOS.patch("receipt-v2"):
        receipt = send_receipt(order_id)
    else:
        receipt = "no receipt"
    approval = DBOS.recv("approval", timeout_seconds=wait_s)
    return {"stock": stock, "payment": payment, "shipping": shipping, "receipt": receipt, "approval": approval}


@DBOS.step()
async def weigh(order_id: str) -> Parcel:
    effect(f"weigh {order_id}")
    return Parcel(order_id, Carrier.COURIER, [1.5, 2.0])


@DBOS.workflow()
async def pack_parcel(order_id: str) -> Parcel:
    parcel = await weigh(order_id)
    await DBOS.sleep_async(0.05)
    return parcel


@DBOS.dbos_class()
class Reports:
    @classmethod
    @DBOS.workflow()
    def daily(cls, day: str) -> dict:
        handle = DBOS.start_workflow(ship, f"report-{day}")
        DBOS.set_event("progress", "started")
        seen = DBOS.get_event(DBOS.workflow_id, "progress", timeout_seconds=1)
        DBOS.send(DBOS.workflow_id, "note to self", topic="notes")
        note = DBOS.recv("notes", timeout_seconds=1)
        return {"day": day, "shipped": handle.get_result(), "seen": seen, "note": note}


@DBOS.step()
def share(people: int) -> Fraction:
    effect(f"share {people}")
    return Fraction(1, people)


@DBOS.workflow()
def split_bill(people: int) -> str:
    return str(share(people))


@DBOS.workflow()
def keep(item: object) -> str:
    return type(item).__name__


@DBOS.dbos_class()
class Warehouse(DBOSConfiguredInstance):
    def __init__(self, site: str) -> None:
        self.site = site
        super().__init__(config_name=site)

    @DBOS.workflow()
    def restock(self, item: str) -> str:
        stock = reserve_stock(f"{self.site}:{item}", 5)
        return f"{self.site} restocked {stock['reserved']} {item}"


berlin = Warehouse("berlin")
