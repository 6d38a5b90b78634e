"""Value types the shop's steps return (pickled by DBOS, rebuilt by replay from typed JSON)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Carrier(enum.Enum):
    POST = "post"
    COURIER = "courier"


@dataclass
class Parcel:
    order_id: str
    carrier: Carrier
    weights: list[float] = field(default_factory=list)
