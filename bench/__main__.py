"""`python -m bench`: the benchmark suite (see bench/suite.py and docs/performance.md)."""

from bench.suite import main

main()
