# SPDX-License-Identifier: MIT
"""Fixtures for the Python client's tests: real redis-server processes on ephemeral
127.0.0.1 ports and a real elkd on a temporary config (tests/agent/lib.sh's ideas).

ELKD names the elkd binary (ctest passes it); the client is imported from python/.
Waits are bounded by generous times, never by counts: the machine may be loaded.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

SLOW = 60.0  # seconds: the bound of every wait for an event


def wait_until(what, cond, timeout=SLOW):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    def __init__(self, tmp, name):
        self.name = name
        self.port = None
        self.proc = None
        for _ in range(10):  # a port taken between free_port() and the bind: try another
            self.port = free_port()
            self.proc = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", tmp,
                 "--logfile", os.path.join(tmp, "redis-%s.log" % name)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_until("redis %s" % name, lambda: self.proc.poll() is not None or self.ping(),
                           20)
            except AssertionError:
                pass
            if self.proc.poll() is None and self.ping():
                return
            self.kill()
        raise RuntimeError("cannot start redis-server %s" % name)

    def ping(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), 1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def signal(self, sig):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait()


class Elkd:
    def __init__(self, tmp, nodes, resources, extra=""):
        self.sock = os.path.join(tmp, "elkd.sock")
        self.log = os.path.join(tmp, "elkd.log")
        self.conf = os.path.join(tmp, "elkd.conf")
        text = "[fleet]\nmode = redlock\ngateway_id = gw-pytest\nrequest_timeout = 200ms\n"
        text += "connect_timeout = 300ms\n"
        for r in nodes:
            text += "[node %s]\nhost = 127.0.0.1\nport = %d\n" % (r.name, r.port)
        text += resources + "[agent]\nsocket = %s\nlog_level = debug\n%s" % (self.sock, extra)
        with open(self.conf, "w") as f:
            f.write(text)
        elkd = os.environ.get("ELKD")
        if not elkd:
            pytest.fail("ELKD must name the elkd binary (ctest sets it)")
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen([elkd, "-c", self.conf, "-f"], stdout=self.logf,
                                     stderr=subprocess.STDOUT)
        wait_until("elkd's nodes to be ready and voting", self.voting)

    def status(self):
        """STATUS JSON over a connection of its own, or None."""
        if self.proc.poll() is not None:
            raise AssertionError("elkd exited %s:\n%s" % (self.proc.returncode, self.log_text()))
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(self.sock)
                s.sendall(b"STATUS JSON\n")
                buf = b""
                while not buf.endswith(b"\n"):
                    d = s.recv(65536)
                    if not d:
                        return None
                    buf += d
            line = buf.decode().splitlines()[0]
            return json.loads(line.split(" ", 2)[2]) if line.startswith("OK JSON ") else None
        except OSError:
            return None

    def voting(self):
        st = self.status()
        return st is not None and all(n.get("state") == "ready" and n.get("votes")
                                      for n in st.get("nodes", []))

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()


RESOURCES = """[resource valve-1]
ttl = 3s
stop_margin = 500ms
wait_min = 20ms
wait_max = 50ms
[resource door-east]
ttl = 3s
stop_margin = 500ms
[semaphore pumps]
permits = 2
ttl = 3s
stop_margin = 500ms
"""


@pytest.fixture
def fleet():
    """Three redis-servers and an elkd on them: yields (elkd, [redis...])."""
    tmp = tempfile.mkdtemp(prefix="elk-pytest.")
    servers, agent = [], None
    try:
        for name in "abc":
            servers.append(Redis(tmp, name))
        agent = Elkd(tmp, servers, RESOURCES)
        yield agent, servers
    finally:
        if agent is not None:
            agent.stop()
        for r in servers:
            r.kill()
        subprocess.call(["rm", "-rf", tmp])
