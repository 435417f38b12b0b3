# SPDX-License-Identifier: MIT
"""The client against a scripted fake elkd (a Unix socket in a temp dir): what it does with
lines a real elkd sends rarely, in one read, or not at all."""
import os
import socket
import tempfile
import threading

import pytest

import edgelock


class FakeElkd:
    """Answers each request line with the next scripted answer (bytes, sent as one write)."""

    def __init__(self, answers):
        self.dir = tempfile.mkdtemp(prefix="elk-fake.")
        self.path = os.path.join(self.dir, "elkd.sock")
        self.srv = socket.socket(socket.AF_UNIX)
        self.srv.bind(self.path)
        self.srv.listen(1)
        self.requests = []
        self.answers = list(answers)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.srv.accept()
        buf = b""
        with conn:
            while self.answers:
                while b"\n" not in buf:
                    d = conn.recv(4096)
                    if not d:
                        return
                    buf += d
                line, buf = buf.split(b"\n", 1)
                self.requests.append(line.decode())
                conn.sendall(self.answers.pop(0))
            conn.recv(4096)  # until the client closes

    def close(self):
        self.srv.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


@pytest.fixture
def fake():
    made = []

    def make(*answers):
        made.append(FakeElkd(answers))
        return made[-1]
    yield make
    for f in made:
        f.close()


def test_event_in_the_same_read_as_the_grant(fake):
    """A LOST right behind the grant (one read) is not missed: the lease is lost."""
    f = fake(b"OK ACQUIRED valve-1 7 5000 500 deadline_boottime_ms=%d\n"
             b"EVENT LOST valve-1 ELK_E_LOCK_TAKEN 500\n" % (edgelock.boottime_ms() + 5000))
    with edgelock.Client(f.path) as c:
        lease = c.acquire("valve-1", wait=2)
        assert lease.token == 7
        assert lease.wait_lost(30) and lease.cause == "ELK_E_LOCK_TAKEN" and not lease.held()
    assert f.requests == ["ACQUIRE valve-1 2000ms"]


def test_grant_without_absolute_deadline(fake):
    """An older elkd (no deadline_boottime_ms): the validity counts from the read."""
    f = fake(b"OK ACQUIRED valve-1 3 4000 500\n", b"OK KEEPALIVE valve-1\n",
             b"OK RELEASED valve-1\n")
    with edgelock.Client(f.path) as c:
        before = edgelock.boottime_ms()
        lease = c.acquire("valve-1", keepalive=1.5)
        assert before + 4000 <= lease.deadline_ms <= edgelock.boottime_ms() + 4000
        assert lease.token == 3 and lease.stop_margin_ms == 500 and lease.held()
        lease.keepalive()
        lease.release()
    assert f.requests == ["ACQUIRE valve-1 0ms keepalive=1500ms", "KEEPALIVE valve-1",
                          "RELEASE valve-1"]


def test_unreadable_grant_is_an_error_not_a_hang(fake):
    f = fake(b"OK ACQUIRED valve-1 not-a-number 1 1\n", b"OK PONG\n")
    with edgelock.Client(f.path, timeout=30) as c:
        with pytest.raises(edgelock.CtlSyntax):
            c.acquire("valve-1")
        assert c.ping()  # the connection still works


def test_unknown_code_keeps_its_name(fake):
    f = fake(b"ERR ELK_E_FROM_THE_FUTURE something new\n")
    with edgelock.Client(f.path) as c:
        with pytest.raises(edgelock.ElkError) as e:
            c.acquire("valve-1")
    assert e.value.code == "ELK_E_FROM_THE_FUTURE" and e.value.message == "something new"


def test_request_from_a_callback_is_refused_not_a_deadlock(fake):
    f = fake(b"OK ACQUIRED valve-1 1 5000 500\nEVENT RENEWED valve-1 1 5000 500\n")
    seen = []
    done = threading.Event()

    def on_event(lease, word, fields):
        try:
            lease.client.status()
        except edgelock.ElkError as e:
            seen.append(e)
        done.set()
    with edgelock.Client(f.path) as c:
        c.acquire("valve-1", on_event=on_event)
        assert done.wait(30)
    assert isinstance(seen[0], edgelock.State)
