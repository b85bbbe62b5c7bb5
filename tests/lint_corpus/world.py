"""The environment, I/O, network, threads and real-time waits in a workflow body."""

import os
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from os import environ
from pathlib import Path

import httpx
import requests

from replaykit import Step, workflow


def record(value: object) -> None:
    pass


@workflow
def environment():
    a = os.environ["HOME"]  # expect: RK104
    b = os.environ.get("USER")  # expect: RK104
    c = os.getenv("LANG")  # expect: RK104
    d = environ["PATH"]  # expect: RK104
    yield Step("record", record, [a, b, c, d])


@workflow
def io():
    with open("config.toml") as handle:  # expect: RK105
        text = handle.read()
    body = requests.get("https://example.com").text  # expect: RK105
    other = httpx.post("https://example.com", json={})  # expect: RK105
    page = urllib.request.urlopen("https://example.com")  # expect: RK105
    conn = socket.create_connection(("example.com", 80))  # expect: RK105
    out = subprocess.run(["ls"], check=True)  # expect: RK105
    data = Path("data.json").read_text()  # expect: RK105
    query = urllib.parse.urlencode({"a": 1})  # pure: not I/O
    name = input("name? ")  # expect: RK105
    yield Step("record", record, [text, body, other, page, conn, out, data, query, name])


@workflow
def threads():
    worker = threading.Thread(target=print)  # expect: RK106
    worker.start()
    with ThreadPoolExecutor() as pool:  # expect: RK106
        pool.submit(print)
    time.sleep(5)  # expect: RK107
    yield Step("record", record, None)
