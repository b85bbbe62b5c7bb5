"""`python -m replaykit` runs the `replaykit` command."""

from replaykit.cli import main

if __name__ == "__main__":
    main()
