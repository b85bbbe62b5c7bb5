"""Helpers a workflow delegates to with `yield from` are checked too; step bodies are not."""

import time
import uuid

import requests

from replaykit import Now, Step, workflow


def fetch(url: str) -> str:
    # A step body: I/O and clocks are what it is for.
    started = time.time()
    return f"{requests.get(url).text} in {time.time() - started}s"


def wait_for_it(url: str):
    stamp = time.time()  # expect: RK101
    page = yield Step("fetch", fetch, url)
    return page, stamp


def deeper(url: str):
    marker = uuid.uuid4()  # expect: RK103
    result = yield from wait_for_it(url)
    return result, marker


def never_delegated_to():
    # Not reached from a workflow: not checked.
    return time.time()


@workflow
def outer(url: str):
    page = yield from deeper(url)
    again = yield from wait_for_it(url)
    now = yield Now()
    return page, again, now


@workflow
def nested_step_bodies(url: str):
    def inline_step() -> str:
        return requests.get(url).text

    page = yield Step("inline", inline_step)
    other = yield Step("lambda", lambda: requests.get(url).text)

    def helper() -> float:
        return time.time()  # expect: RK101

    return page, other, helper()
