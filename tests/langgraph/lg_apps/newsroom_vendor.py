"""The newsroom agent handing its intro to a proofreader from another package (``lg_vendor``)."""

from __future__ import annotations

from langgraph.func import entrypoint

from lg_apps.newsroom import write_part
from lg_vendor.proofreader import proofreader


@entrypoint()
def vendor_newsroom(brief: dict) -> str:
    intro = write_part("intro", brief["topic"]).result()
    return proofreader.invoke(intro)
