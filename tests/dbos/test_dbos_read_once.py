"""Replaying imported DBOS runs reads each history file once, a redacted run that diverges included (its
redacted paths come from the history the replay loaded). The replays run in a fresh pytest process, as
in the other DBOS tests; a conftest there counts every ``open`` of a history file with an audit hook
once collection (which sniffs each file's head) is over, and writes the counts to ``opens.json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dbos_kit import Recording, edited, project, replay, report

from replaytest.history import Redactor, load_history, redact_file

COUNTING_CONFTEST = '''
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HISTORIES = os.path.join(HERE, "histories") + os.sep
OPENS = {}
COUNTING = []


def _opened(event, args):
    if COUNTING and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        name = os.path.abspath(os.fsdecode(args[0]))
        if name.startswith(HISTORIES) and name.endswith(".json"):
            OPENS[name[len(HISTORIES):]] = OPENS.get(name[len(HISTORIES):], 0) + 1


sys.addaudithook(_opened)


def pytest_collection_finish(session):
    COUNTING.append(True)


def pytest_sessionfinish(session):
    COUNTING.clear()
    with open(os.path.join(HERE, "opens.json"), "w", encoding="utf-8") as out:
        json.dump(OPENS, out)
'''

# The order is saved after the durable sleep instead of before it.
REORDERED = edited(('    save_order(order_id, "paid")\n    DBOS.sleep(0.1)\n', '    DBOS.sleep(0.1)\n    save_order(order_id, "paid")\n'))


def opens(root: Path) -> dict[str, int]:
    return json.loads((root / "opens.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_every_recorded_run_replays_with_one_read_of_its_file(pytester: pytest.Pytester, pickled: Recording) -> None:
    root = project(pytester, pickled.histories)
    (root / "conftest.py").write_text(COUNTING_CONFTEST)
    result = replay(pytester)
    result.assert_outcomes(passed=10)
    names = sorted(path.name for path in (root / "histories").glob("*.json"))
    assert len(names) == 10
    assert opens(root) == {name: 1 for name in names}


@pytest.mark.slow
def test_a_diverging_redacted_run_is_read_once_and_lists_what_the_code_could_read(
    pytester: pytest.Pytester, pickled: Recording, tmp_path: Path
) -> None:
    clean = tmp_path / "clean"
    # The order id the run was started with and the shipping child's label (event #6) are redacted.
    redact_file(pickled.histories / "order-ok.json", clean / "order-ok.json",
                Redactor.build(json_paths=["$.input.args[0]", "$.events[5].result"]))  # fmt: skip
    assert load_history(clean / "order-ok.json").redacted == ("$.events[5].result", "$.input.args[0]")
    root = project(pytester, clean, REORDERED)
    (root / "conftest.py").write_text(COUNTING_CONFTEST)
    result = replay(pytester)
    result.assert_outcomes(failed=1)
    text = report(result)
    # The reordered code sleeps where the history saved the order (event #3), before it could have read
    # the shipping label.
    assert "command-mismatch at event #3" in text
    assert "note: this history was redacted; the code may have read pseudonyms at $.input.args[0]\n" in text
    assert opens(root) == {"order-ok.json": 1}
