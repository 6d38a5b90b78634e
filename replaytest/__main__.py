"""``python -m replaytest``: the same command line as the ``replaytest`` console script."""

from replaytest.cli import main

if __name__ == "__main__":
    main()
