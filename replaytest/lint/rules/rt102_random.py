"""RT102: drawing randomness in orchestration code."""

from __future__ import annotations

from replaytest.lint.rule import CallFact, Invalid, Rule
from replaytest.lint.vocabulary import RANDOM_FUNCTIONS

_CHANGES_STATE = frozenset({"shuffle", "seed", "setstate", "set_state"})
_SEEDABLE = {"random.Random", "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.seed"}


class DrawsUnrecordedRandomness(Rule):
    """
    ## What it does
    Finds module-level `random.*` calls, unseeded `random.Random()`, `secrets.*`, `os.urandom` and
    `numpy.random.*` in orchestration code. A draw whose value only fills log output is reported only on
    Temporal, whose sandbox rejects it, as RT101 says for the clock; a shuffle or a seed changes state and
    is always reported.

    ## Why is this bad?
    Each replay draws different numbers, so branches, choices and generated names differ from the
    recorded run and the engine reports a nondeterminism error (or silently does something else).

    ## Example
    ```python
    delay = random.randint(1, 10)
    ```

    ## Use instead
    ```python
    delay = workflow.random().randint(1, 10)
    ```

    ## Fix safety
    Rewriting `random.f(...)` to the framework's seeded generator (`workflow.random().f(...)`) keeps
    the arguments and is safe. A `random.Random(seed)` with an explicit seed is not reported.
    """

    code = "RT102"
    name = "draws-unrecorded-randomness"
    category = "random"
    summary = "Randomness drawn in orchestration code"
    what = "draws fresh randomness"
    calls = {
        **{f"random.{name}": "" for name in RANDOM_FUNCTIONS},
        "random.Random": "creates an unseeded random generator",
        "random.SystemRandom": "",
        "secrets.*": "",
        "os.urandom": "",
        "os.getrandom": "",
        "numpy.random.*": "",
    }

    def accept_call(self, call: CallFact) -> bool:
        if call.qualname in _SEEDABLE:
            seed = call.positional[0] if call.positional else call.keyword("seed") or call.keyword("x")
            return seed is None or (hasattr(seed, "value") and getattr(seed, "value", None) == "None")
        return True

    def only_reads(self, call: CallFact) -> bool:
        # Shuffling or seeding changes state (the list, the generator) that outlives the call.
        return call.qualname.rpartition(".")[2] not in _CHANGES_STATE

    VALID = (
        """
import random
from temporalio import workflow

@workflow.defn
class Pick:
    @workflow.run
    async def run(self, seed: int) -> int:
        rng = random.Random(seed)
        return rng.randint(1, 6) + workflow.random().randint(1, 6)
""",
        """
import logging
import random
from dbos import DBOS

@DBOS.workflow()
def sample(batch: list[str]) -> int:
    logging.debug("sampling with jitter %.3f", random.random())
    return len(batch)
""",
    )
    INVALID = (
        Invalid(
            """
import random
from temporalio import workflow

@workflow.defn
class Pick:
    @workflow.run
    async def run(self) -> int:
        return random.randint(1, 6)
""",
            line=8, column=16,
            message='random.randint() draws fresh randomness in workflow code; use workflow.random()', fix='workflow.random().randint(1, 6)', fix_safe=True,
        ),
        Invalid(
            """
from secrets import token_hex
from dbos import DBOS

@DBOS.workflow()
def name() -> str:
    return token_hex(8)
""",
            line=6, column=12,
            message='token_hex() draws fresh randomness in workflow code; use a @DBOS.step() function that draws the value',
        ),
        Invalid(
            """
import logging
import random
from dbos import DBOS

@DBOS.workflow()
def sample(batch: list[str]) -> list[str]:
    jitter = random.random()
    logging.debug("sampling with jitter %.3f", jitter)
    return batch if jitter < 0.5 else batch[:1]
""",
            line=7, column=14,
            message='random.random() draws fresh randomness in workflow code; use a @DBOS.step() function that draws the value',
        ),
        Invalid(
            """
import random
from temporalio import workflow

@workflow.defn
class Pick:
    @workflow.run
    async def run(self) -> float:
        return random.Random().random()
""",
            line=8, column=16,
            message='random.Random() creates an unseeded random generator in workflow code; use workflow.random()',
        ),
    )
