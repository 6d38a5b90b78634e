"""A helper the workflows call: reads the clock outside any workflow's own lines."""

import time

# The double run's second process reads a clock 25h01m01s later. A day's parity flips under that shift only
# before 22:58:59 UTC (after it, two midnights are crossed); counted in periods of the shift itself, the parity
# flips whatever the time of day, so the planted clock hazard is found at any hour.
CLOCK_SHIFT_S = 25 * 3600 + 61


def is_weekend_now():
    return int(time.time() // CLOCK_SHIFT_S) % 2 == 0
