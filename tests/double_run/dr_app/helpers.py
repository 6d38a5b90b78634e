"""A helper the workflows call: reads the clock outside any workflow's own lines."""

import time


def is_weekend_now():
    return int(time.time() // 86400) % 2 == 0  # the day's parity: a run a day and an hour later flips it
