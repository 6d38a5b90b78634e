"""Loading a history costs memory proportional to it, asserted with an operating-system limit: a child
process replays a large history (about 34 MB, 120,000 events of a support-inbox agent) with its address
space capped (``RLIMIT_AS``) at what it holds before the replay plus ``ALLOWED_GROWTH`` times the file's
size (and a little slack for the allocator), and must pass. The loader once held the file's bytes, its
text and its whole parsed document at once (4.6 times the file at its peak resident set, measured with
``benchmarks/history_limits_bench.py``); under this cap such a load fails with ``MemoryError``. The
same child under a cap of the file's size alone must fail, so the cap is known to bind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from inbox_agent import inbox_history

from replaytest.history import save_history

HERE = Path(__file__).resolve().parent
TICKETS = 60_000  # two events each
# Measured here: the load and replay pass with the address space capped at 2.3 times the file (not at
# 2.0), and the old loader failed at 4 (passed at 5). 3 times, plus a fixed allowance for the
# allocator's own slack, is clearly above the one and below the other.
ALLOWED_GROWTH = 3.0
ALLOCATOR_SLACK = 16 * 1024**2

# The child imports and warms up everything a replay uses on a small history first, so the cap covers
# the large history's load and replay alone; then it caps its own address space and replays.
CHILD = r"""
import json, resource, sys
sys.path.insert(0, {here!r})
from pathlib import Path
from inbox_agent import inbox_triage
from replaytest.plugins import load_plugins
from replaytest.replay.adapter import ReplayOptions, WorkflowSet
from replaytest.replay.runner import replay_file

replayers = [plugin.replayer for plugin in load_plugins() if plugin.replayer is not None]
workflows, options = WorkflowSet((inbox_triage,)), ReplayOptions()
assert replay_file(Path({small!r}), replayers, workflows, options).status == "passed"
with open("/proc/self/status") as status:
    before = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
cap = before + {slack!r} + int({growth!r} * Path({large!r}).stat().st_size)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
try:
    result = replay_file(Path({large!r}), replayers, workflows, options)
    outcome = {{"status": result.status, "events": result.events, "error": result.error}}
    if result.error is not None and "MemoryError" in result.error:  # raised inside the replayer
        outcome = {{"status": "MemoryError"}}
except MemoryError:
    outcome = {{"status": "MemoryError"}}
print(json.dumps(outcome))
"""


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a small inbox history for the warm-up, the large one)."""
    directory = tmp_path_factory.mktemp("inbox")
    small = save_history(inbox_history(5), directory / "small" / "inbox.json").source
    large = save_history(inbox_history(TICKETS), directory / "large" / "inbox.json").source
    assert small is not None and large is not None
    return small, large


def _replay_capped(histories: tuple[Path, Path], growth: float, slack: int = ALLOCATOR_SLACK) -> dict[str, object]:
    small, large = histories
    code = CHILD.format(here=str(HERE), small=str(small), large=str(large), growth=growth, slack=slack)
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    outcome: dict[str, object] = json.loads(ran.stdout.strip().splitlines()[-1])
    return outcome


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the address space from /proc (Linux)")
def test_a_large_history_replays_within_a_small_multiple_of_its_size(histories: tuple[Path, Path]) -> None:
    assert histories[1].stat().st_size > 30_000_000  # large enough that copies of it dominate the cap
    outcome = _replay_capped(histories, ALLOWED_GROWTH)
    assert outcome == {"status": "passed", "events": 2 * TICKETS, "error": None}


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the address space from /proc (Linux)")
def test_the_cap_binds_a_load_that_needs_more_than_the_file_itself(histories: tuple[Path, Path]) -> None:
    # The file's text alone is as large as the file: nothing loads it under a cap of its size.
    assert _replay_capped(histories, 1.0, slack=0) == {"status": "MemoryError"}
