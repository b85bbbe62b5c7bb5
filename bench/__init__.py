"""replaykit benchmarks: run by hand, never as timed tests (see docs/performance.md)."""
