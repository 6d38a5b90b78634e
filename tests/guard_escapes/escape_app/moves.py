"""The effects, each on a line tagged ``# [name]``, and what they use that was made at import (a socket
connected, an HTTP connection open, a database, a thread pool). Inactive unless ``ESCAPES_ACTIVE=1``:
the runs are recorded without them, then replayed with them. Each effect, had it happened, leaves a mark
under ``ESCAPE_TARGET``: a file or folder named after it, bytes at the test's servers, a row, a mode."""

from __future__ import annotations

import _io
import atexit
import ctypes
import dbm.dumb
import http.client
import inspect
import io
import logging
import multiprocessing
import os
import posix
import shelve
import signal
import socket
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ACTIVE = os.environ.get("ESCAPES_ACTIVE") == "1"

if ACTIVE:
    TARGET = Path(os.environ["ESCAPE_TARGET"])
    CONNECTED = socket.create_connection(("127.0.0.1", int(os.environ["ESCAPE_TCP_PORT"])))
    HTTP = http.client.HTTPConnection("127.0.0.1", int(os.environ["ESCAPE_TCP_PORT"]))
    HTTP.connect()
    DATAGRAMS = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    UDP_ADDRESS = ("127.0.0.1", int(os.environ["ESCAPE_UDP_PORT"]))
    DB = sqlite3.connect(TARGET / "app.db", check_same_thread=False)
    DB.execute("CREATE TABLE IF NOT EXISTS refunds (id TEXT)")
    DB.commit()
    EXECUTOR = ThreadPoolExecutor(1)
    EXECUTOR.submit(int).result()  # its worker thread is already running
    (TARGET / "mode.txt").write_text("kept\n")
    os.chmod(TARGET / "mode.txt", 0o644)


def perform(name: str) -> None:
    if not ACTIVE:
        return
    mark = str(TARGET / name)
    if name == "multiprocessing-spawn":
        multiprocessing.get_context("spawn").Process(target=os.mkdir, args=(mark,)).start()  # [multiprocessing-spawn]
    elif name == "posix-system":
        posix.system(f"mkdir {mark}")  # [posix-system]
    elif name == "io-FileIO":
        io.FileIO(mark, "w")  # [io-FileIO]
    elif name == "_io-open":
        _io.open(mark, "w")  # [_io-open]
    elif name == "shelve":
        shelve.open(mark)  # [shelve]
    elif name == "dbm-dumb":
        dbm.dumb.open(mark, "c")  # [dbm-dumb]
    elif name == "atexit":
        atexit.register(os.mkdir, mark)  # [atexit]
    elif name == "socket-sendall":
        CONNECTED.sendall(b"refund sent\n")  # [socket-sendall]
    elif name == "socket-send":
        CONNECTED.send(b"refund sent\n")  # [socket-send]
    elif name == "socket-sendto":
        DATAGRAMS.sendto(b"refund sent\n", UDP_ADDRESS)  # [socket-sendto]
    elif name == "http-keep-alive":
        HTTP.request("POST", "/refunds", body=b"{}")  # [http-keep-alive]
    elif name == "unwrap-open":
        inspect.unwrap(open)(mark, "w")  # [unwrap-open]
    elif name == "sqlite-import-connection":
        DB.execute("INSERT INTO refunds VALUES ('r-1')")  # [sqlite-import-connection]
    elif name == "sqlite-connect":
        sqlite3.connect(mark)  # [sqlite-connect]
    elif name == "thread-start":
        threading.Thread(target=os.mkdir, args=(mark,)).start()  # [thread-start]
    elif name == "executor-submit":
        EXECUTOR.submit(os.mkdir, mark).result()  # [executor-submit]
    elif name == "ctypes":
        ctypes.CDLL(None).mkdir(mark.encode(), 0o755)  # [ctypes]
    elif name == "chmod":
        os.chmod(TARGET / "mode.txt", 0o600)  # [chmod]
    elif name == "logging-FileHandler":
        logging.FileHandler(mark)  # [logging-FileHandler]
    elif name == "signal":
        signal.signal(signal.SIGUSR1, lambda *_: Path(mark).mkdir())  # [signal]
        os.kill(os.getpid(), signal.SIGUSR1)
    else:
        raise ValueError(name)
