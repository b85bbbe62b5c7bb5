"""Reading the clock in a workflow body, through every kind of import."""

import datetime
import datetime as dt
import time
import time as t
from datetime import date
from datetime import datetime as DateTime
from time import monotonic
from time import time as now

from replaykit import Step, workflow


def record(value: object) -> None:
    pass


@workflow
def clocks():
    a = time.time()  # expect: RK101
    b = t.time_ns()  # expect: RK101
    c = now()  # expect: RK101
    d = monotonic()  # expect: RK101
    e = datetime.datetime.now()  # expect: RK101
    f = dt.datetime.utcnow()  # expect: RK101
    g = DateTime.now(tz=datetime.UTC)  # expect: RK101
    h = date.today()  # expect: RK101
    i = time.localtime()  # expect: RK101
    j = time.strftime("%Y")  # expect: RK101
    k = time.perf_counter()  # expect: RK101
    yield Step("record", record, [a, b, c, d, e, f, g, h, i, j, k])


@workflow
def clock_in_step_arguments():
    # Arguments are computed in the body, even though the step body is not checked.
    yield Step("record", record, time.time())  # expect: RK101


@workflow
def formatting_is_fine(stamp: float):
    # A time given as an argument is deterministic: nothing reads the clock here.
    text = time.strftime("%Y", time.gmtime(stamp))
    later = DateTime.fromtimestamp(stamp) + datetime.timedelta(days=1)
    yield Step("record", record, [text, later])
