"""Property-testing a workflow with replaykit.testing and hypothesis.

Run it:  python examples/testing_example.py
docs/testing.md shows this file; tests/test_testing_kit.py runs it and checks
the two agree.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replaykit import Race, Recv, Retry, Sleep, Status, Step, testing, workflow
from replaykit.testing import strategies as rks


class CardDeclined(Exception):
    pass


def charge_card(customer: str, amount: int) -> str:
    raise NotImplementedError("the real payment provider; faked in tests")


def send_email(customer: str, text: str) -> None:
    raise NotImplementedError("the real mailer; faked in tests")


@workflow(name="example.renew")
def renew(customer: str, amount: int) -> Generator[Any, Any, str]:
    try:
        charge_id = yield Step(
            "charge",
            charge_card,
            customer,
            amount,
            retry=Retry(max_attempts=3, interval=timedelta(minutes=1), retry_on=TimeoutError),
        )
    except CardDeclined:
        yield Step("email", send_email, customer, "your card was declined")
        winner, _ = yield Race(Recv("card-updated"), Sleep(timedelta(days=3)))
        if winner == 1:
            return "cancelled"
        charge_id = yield Step("charge-again", charge_card, customer, amount)
    yield Step("receipt", send_email, customer, f"receipt for {charge_id}")
    return f"renewed {charge_id}"


@settings(max_examples=25, deadline=None)
@given(
    fakes=rks.step_fakes(
        {
            # Up to two timeouts (retried), then a charge id or a decline.
            "charge": rks.step(st.sampled_from(["ch_1", "ch_2"]), raises=[CardDeclined], flaky=2),
            "charge-again": rks.step(st.just("ch_3"), raises=[CardDeclined]),
            "email": st.none(),
            "receipt": st.none(),
        }
    ),
    # The customer updates the card before the 3-day deadline, after it, or never.
    update=rks.race_winners(
        {"card-updated": st.just({"card": "new"})},
        deadline=timedelta(days=3),
        resolution=timedelta(hours=1),
    ),
)
def test_renew(fakes: dict[str, rks.GeneratedFake], update: rks.RaceScenario) -> None:
    result = testing.run(renew, "cus_1", 500, steps=fakes, messages=update)

    plan = fakes["charge"].plan_for("cus_1", 500)  # [TimeoutError..., final outcome]
    assert len(result.calls["charge"]) == len(plan)  # every timeout was retried, once
    final = plan[-1]
    if not isinstance(final, CardDeclined):
        assert result.result == f"renewed {final}"
        assert "email" not in result.calls
    elif update.winner is None:
        assert result.result == "cancelled"
        assert "charge-again" not in result.calls
    elif isinstance(fakes["charge-again"].plan_for("cus_1", 500)[-1], CardDeclined):
        assert result.status is Status.ERROR
        assert isinstance(result.error, CardDeclined)
    else:
        assert result.result == "renewed ch_3"
    # A receipt goes out exactly when the renewal succeeded.
    receipts = len(result.calls.get("receipt", []))
    assert receipts == (1 if result.ok and result.unwrap().startswith("renewed") else 0)

    # Resuming from any point, or after a crash at any point, ends the same way.
    testing.check_determinism(renew, "cus_1", 500, steps=fakes, messages=update)


if __name__ == "__main__":
    test_renew()
    print("test_renew passed")
