"""Testing workflows: in-memory runs on virtual time, replays, determinism checks.

Hypothesis strategies live in `replaykit.testing.strategies` (imported on
demand, so hypothesis is only needed by tests that use them).
"""

from replaykit.testing._cancels import Cancel
from replaykit.testing._completions import Completion
from replaykit.testing._elapse import elapse
from replaykit.testing._fakes import StepCall, sequence
from replaykit.testing._real_steps import UnfakedSteps
from replaykit.testing._session import Commit, Message, TooManyGenerations
from replaykit.testing._updates import Update, UpdateReply
from replaykit.testing.conformance import check_store
from replaykit.testing.determinism import DeterminismReport, check_determinism, format_log
from replaykit.testing.harness import RunResult, run
from replaykit.testing.replay import ReplayResult, ResultMismatch, replay

__all__ = [
    "Cancel",
    "Commit",
    "Completion",
    "DeterminismReport",
    "Message",
    "ReplayResult",
    "ResultMismatch",
    "RunResult",
    "StepCall",
    "TooManyGenerations",
    "UnfakedSteps",
    "Update",
    "UpdateReply",
    "check_determinism",
    "check_store",
    "elapse",
    "format_log",
    "replay",
    "run",
    "sequence",
]
