"""Slips: a command not yielded, a step function called, a non-command yielded, async def."""

from replaykit import Call, Now, Sleep, Step, workflow


def charge_card(order_id: str) -> str:
    return f"ch_{order_id}"


def ship(order_id: str) -> str:
    return f"parcel-{order_id}"


def helper_steps(order_id: str):
    yield Step("ship", ship, order_id)


@workflow
def child(order_id: str):
    yield Step("ship", ship, order_id)


@workflow
def not_yielded(order_id: str):
    Step("charge", charge_card, order_id)  # expect: RK201
    Sleep(60)  # expect: RK201
    yield Now()


@workflow
def called_directly(order_id: str):
    charge = charge_card(order_id)  # expect: RK202
    yield Step("ship", ship, charge)


@workflow
def not_commands(order_id: str):
    yield  # expect: RK203
    yield "charge"  # expect: RK203
    yield 42  # expect: RK203
    yield f"order {order_id}"  # expect: RK203
    yield [Step("ship", ship, order_id), Step("ship", ship, order_id)]  # expect: RK203
    yield Now  # expect: RK203
    yield charge_card  # expect: RK203
    yield helper_steps(order_id)  # expect: RK203
    yield child(order_id)  # expect: RK203
    yield from helper_steps(order_id)
    yield Call(child, order_id)


@workflow
async def an_async_workflow(order_id: str):  # expect: RK204
    return order_id
