"""State shared across workflow runs in one process: the Temporal sandbox passes this module through."""

import itertools

runs = itertools.count()
