# SPDX-License-Identifier: MIT
"""The Python client (python/edgelock) against a real elkd and real redis-servers."""
import os
import re
import signal
import threading

import pytest

import edgelock
from conftest import SLOW, wait_until

ERR_H = os.path.join(os.path.dirname(__file__), "..", "..", "lib", "include", "elk", "err.h")


def test_codes_match_err_h():
    """Every code of err.h has its exception class, and the client invents none."""
    with open(ERR_H) as f:
        names = re.findall(r"X\((ELK_E_[A-Z0-9_]+),", f.read())
    assert names and set(names) == set(edgelock.CODES)
    assert edgelock.error_class("ELK_E_LOCK_BUSY") is edgelock.LockBusy
    assert issubclass(edgelock.FleetUnavailable, edgelock.ElkError)
    assert edgelock.error_class("ELK_E_NEW_IN_A_LATER_ELKD") is edgelock.ElkError


def test_version_is_the_projects():
    with open(os.path.join(os.path.dirname(ERR_H), "..", "..", "..", "CMakeLists.txt")) as f:
        version = re.search(r"project\(edgelock VERSION ([0-9.]+)", f.read()).group(1)
    assert edgelock.__version__ == version


def test_lease_token_deadline_status_release(fleet):
    agent, _ = fleet
    with edgelock.lease("valve-1", wait=5, socket=agent.sock) as lease:
        assert lease.token >= 1
        assert lease.held()
        # the deadline is in CLOCK_BOOTTIME ms, within one ttl (3 s) of now
        assert 0 < lease.deadline_ms - edgelock.boottime_ms() <= 3000
        assert 0 < lease.remaining() <= 3.0
        st = lease.status()
        assert st["state"] in ("held", "renewing", "suspect")
        assert str(st["token"]) == str(lease.token)
        assert st["holder"] == "pid:%d" % os.getpid()
        first = lease.token
        # renewals move the deadline on (the event is applied by the reader thread)
        wait_until("a renewal", lambda: any(e.startswith("EVENT RENEWED valve-1")
                                            for e in lease.events))
        assert lease.held() and lease.token == first
    # released: elkd shows the resource idle, and the next holder gets a larger token
    wait_until("valve-1 idle", lambda: _resource(agent, "valve-1")["state"] == "idle")
    # STATUS JSON schema 2 (docs/control-protocol.md): an absent holder is null, not "-"
    with edgelock.Client(agent.sock) as c:
        whole = c.status()
    assert whole["schema"] == 2
    assert [r["holder"] for r in whole["resources"] if r["name"] == "valve-1"] == [None]
    with edgelock.lease("valve-1", socket=agent.sock) as again:
        assert again.token > first


def test_errors_are_named_after_codes(fleet):
    agent, _ = fleet
    with edgelock.Client(agent.sock) as c:
        with pytest.raises(edgelock.ResourceUnknown) as e:
            c.acquire("no-such-valve")
        assert e.value.code == "ELK_E_RESOURCE_UNKNOWN" and "no-such-valve" in str(e.value)
        with pytest.raises(edgelock.NotHeld):
            c.keepalive("valve-1")
        held = c.acquire("valve-1", wait=5)
        with edgelock.Client(agent.sock) as other:
            with pytest.raises(edgelock.LockBusy):
                other.acquire("valve-1")
            with pytest.raises(edgelock.LockTimeout):
                other.acquire("valve-1", wait=0.3)
        with pytest.raises(edgelock.AlreadyHeld):
            c.acquire("valve-1")
        held.release()
    with pytest.raises(edgelock.AgentUnreachable):
        edgelock.Client(agent.sock + ".missing")


def test_keepalive_and_ping(fleet):
    agent, _ = fleet
    with edgelock.Client(agent.sock) as c:
        assert c.ping()
        lease = c.acquire("valve-1", wait=5, keepalive=2)
        lease.keepalive()
        assert lease.status()["keepalive_ms"] == 2000
        lease.release()
        with pytest.raises(edgelock.NotHeld):
            c.keepalive("valve-1")


def test_loss_while_held_fires_callback(fleet):
    """The fleet stops answering while the lease is held: the callback and the event fire
    with the cause, and the lease no longer counts as held."""
    agent, servers = fleet
    seen = []
    fired = threading.Event()

    def on_lost(lease, cause):
        seen.append((cause, edgelock.boottime_ms(), lease.deadline_ms))
        fired.set()

    with edgelock.lease("valve-1", wait=5, socket=agent.sock, on_lost=on_lost) as lease:
        token = lease.token
        for r in servers:
            r.signal(signal.SIGSTOP)
        try:
            assert lease.wait_lost(SLOW), "no EVENT LOST within %d s" % SLOW
            assert fired.wait(SLOW)
        finally:
            for r in servers:
                r.signal(signal.SIGCONT)
        cause, _, _ = seen[0]
        assert cause in ("ELK_E_FLEET_LOST", "ELK_E_LOCK_LOST"), seen
        assert lease.cause == cause and not lease.held() and lease.remaining() == 0
        assert any(e.startswith("EVENT LOST valve-1 " + cause) for e in lease.events)
        with pytest.raises(edgelock.LeaseLost) as e:
            lease.check()
        assert e.value.code == cause
        assert lease.token == token
    # elkd's own record agrees: it logged the loss of this lease
    assert re.search(r"LOST.*valve-1|valve-1.*LOST|lost", agent.log_text())


def test_loss_when_elkd_goes_away(fleet):
    """elkd stopping (SIGTERM) tells holders EVENT SHUTDOWN: the lease is lost."""
    agent, _ = fleet
    causes = []
    c = edgelock.Client(agent.sock)
    try:
        lease = c.acquire("valve-1", wait=5, on_lost=lambda l, cause: causes.append(cause))
        agent.proc.send_signal(signal.SIGTERM)
        assert lease.wait_lost(SLOW)
        assert causes and causes[0] in ("ELK_E_SHUTTING_DOWN", "ELK_E_CLOSED")
        wait_until("the connection to close", lambda: c.closed)
        with pytest.raises(edgelock.Closed):
            c.status()
    finally:
        c.close()


def _resource(agent, name):
    return next(r for r in agent.status()["resources"] if r["name"] == name)


def test_semaphore_permits(fleet):
    """A [semaphore] taken by its name: the grant names a permit (pumps#k), the lease goes by
    it (events, RELEASE, STATUS), a full budget is PermitsTaken, RELEASE by the semaphore's
    name frees this connection's permit, and a loss reaches the permit's lease."""
    agent, servers = fleet
    with edgelock.Client(agent.sock) as c1, edgelock.Client(agent.sock) as c2, \
            edgelock.Client(agent.sock) as c3:
        l1 = c1.acquire("pumps", wait=5)
        l2 = c2.acquire("pumps", wait=5)
        assert {l1.permit, l2.permit} == {"pumps#1", "pumps#2"}, (l1, l2)
        for l in (l1, l2):
            assert l.semaphore == "pumps" and l.resource == l.permit and l.held(), l
            assert l.status()["name"] == l.permit and l.status()["holder"] is not None
        with pytest.raises(edgelock.PermitsTaken):
            c3.acquire("pumps")
        c1.release("pumps")  # the semaphore's name: the permit c1 holds
        assert l1.released
        l3 = c3.acquire("pumps", wait=10)
        assert l3.permit == l1.permit, (l1, l3)
        # a plain resource's lease has no permit
        plain = c1.acquire("door-east", wait=5)
        assert plain.permit is None and plain.semaphore is None and plain.resource == "door-east"
        plain.release()
        for r in servers:
            r.signal(signal.SIGSTOP)
        try:
            assert l3.wait_lost(SLOW), "no EVENT LOST for %s within %d s" % (l3.permit, SLOW)
            assert l2.wait_lost(SLOW), "no EVENT LOST for %s within %d s" % (l2.permit, SLOW)
        finally:
            for r in servers:
                r.signal(signal.SIGCONT)
        for l in (l2, l3):
            assert any(e.startswith("EVENT LOST " + l.permit + " ") for e in l.events), l.events
            assert not l.held() and l.cause is not None
