"""For the forged-control test: a TCP relay on loopback between a worker and its master that can put
frames of its own on the master→worker stream, as someone on the path could.

It forwards both directions as they come; the master→worker direction is read as ZMTP 3 (a 64-byte
greeting, then frames: a flags byte, a one- or eight-byte length, the body), so an injected frame
goes in between two whole frames, after the handshake, and the worker's ZeroMQ takes it as a
message from its master. Bounded: it serves one connection, and every socket has a timeout.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

GREETING = 64
TIMEOUT_S = 300.0
MASTER_WAIT_S = 120.0


def frame(body: bytes) -> bytes:
    """One ZMTP message frame (no more frames after it) holding `body`."""
    if len(body) < 256:
        return bytes([0x00, len(body)]) + body
    return bytes([0x02]) + len(body).to_bytes(8, "big") + body


class Injector:
    """Relays one worker connection to `master`; `inject` queues frames for the next frame boundary."""

    def __init__(self, master: tuple[str, int]) -> None:
        self.master = master
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(TIMEOUT_S)
        self.port = self.listener.getsockname()[1]
        self.pending: list[bytes] = []
        self.injected = 0
        self.frames_to_worker = 0
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def inject(self, *frames: bytes) -> None:
        with self.lock:
            self.pending.extend(frames)

    def _serve(self) -> None:
        try:
            worker, _ = self.listener.accept()
        except OSError:
            return
        master = self._connect_master()
        if master is None:
            worker.close()
            return
        worker.settimeout(TIMEOUT_S)
        self.sockets += [worker, master]
        threading.Thread(target=self._pipe, args=(worker, master), daemon=True).start()
        self._to_worker(master, worker)

    def _connect_master(self) -> socket.socket | None:
        """The master's port, tried until it listens (it opens once the drill has planned), or None."""
        deadline = time.monotonic() + MASTER_WAIT_S
        while time.monotonic() < deadline:
            try:
                return socket.create_connection(self.master, timeout=TIMEOUT_S)
            except OSError:
                time.sleep(0.2)
        return None

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass

    def _to_worker(self, master: socket.socket, worker: socket.socket) -> None:
        buffer, greeting, handshaken = b"", GREETING, False
        try:
            while chunk := master.recv(65536):
                if greeting:  # the greeting goes on at once, byte by byte as it comes: each side waits for the other's
                    head, chunk = chunk[:greeting], chunk[greeting:]
                    worker.sendall(head)
                    greeting -= len(head)
                buffer += chunk
                while (size := self._unit(buffer)) and len(buffer) >= size:
                    unit, buffer = buffer[:size], buffer[size:]
                    handshaken = handshaken or bool(unit[0] & 0x04)
                    self.frames_to_worker += int(not unit[0] & 0x04)
                    worker.sendall(unit)
                    if handshaken:
                        self._flush(worker)
        except OSError:
            pass

    @staticmethod
    def _unit(buffer: bytes) -> int:
        """The length of the next whole frame at the head of `buffer` (0: not enough read to tell)."""
        if len(buffer) < 2 or (buffer[0] & 0x02 and len(buffer) < 9):
            return 0
        return 9 + int.from_bytes(buffer[1:9], "big") if buffer[0] & 0x02 else 2 + buffer[1]

    def _flush(self, worker: socket.socket) -> None:
        with self.lock:
            pending, self.pending = self.pending, []
        for injected in pending:
            worker.sendall(injected)
            self.injected += 1

    def close(self) -> None:
        for sock in [self.listener, *self.sockets]:
            try:
                sock.close()
            except OSError:
                pass
        self.thread.join(timeout=5)


@contextmanager
def injector(master: tuple[str, int]) -> Iterator[Injector]:
    relay = Injector(master)
    relay.thread.start()
    try:
        yield relay
    finally:
        relay.close()
