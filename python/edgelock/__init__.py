# SPDX-License-Identifier: MIT
"""A client for elkd's control socket (docs/control-protocol.md), standard library only.

    import edgelock

    with edgelock.lease("valve-1", wait=5) as lease:
        while lease.held():              # deadline not passed, no EVENT LOST
            drive(lease.token)           # the actuator checks the fencing token
            lease.keepalive()            # only with keepalive=...

A lease belongs to its connection: closing the connection (leaving the ``with`` block, the
process exiting or dying) releases it. One thread per connection reads every line elkd
sends, so events are seen while your code works; ``on_lost`` callbacks run in that thread.
Errors elkd reports are raised as subclasses of :class:`ElkError` named after the
protocol's code (``ERR ELK_E_LOCK_BUSY ...`` raises :class:`LockBusy`).
"""
import json
import os
import socket
import threading
import time

__all__ = ["DEFAULT_SOCKET", "Client", "Lease", "lease", "ElkError", "LeaseLost", "error_class",
           "boottime_ms"]
__version__ = "0.1.0"

DEFAULT_SOCKET = "/run/elkd/elkd.sock"

# Every code name of lib/include/elk/err.h (tests/python checks the two lists match).
# elkd answers with these names; each becomes an exception class: ELK_E_LOCK_BUSY -> LockBusy.
CODES = (
    "ELK_E_INVALID_ARG ELK_E_BUF_TOO_SMALL ELK_E_STATE ELK_E_NOT_SUPPORTED ELK_E_INTERNAL "
    "ELK_E_NAME_TOO_LONG ELK_E_NAME_INVALID ELK_E_WOULD_BLOCK ELK_E_RESP_PROTOCOL "
    "ELK_E_RESP_LENGTH ELK_E_RESP_TOO_DEEP ELK_E_RESP_TOO_MANY_NODES ELK_E_RESP_TOO_LARGE "
    "ELK_E_POOL_EMPTY ELK_E_POOL_FOREIGN ELK_E_POOL_DOUBLE_FREE ELK_E_RESOLVE "
    "ELK_E_CONNECT_REFUSED ELK_E_CONNECT_TIMEOUT ELK_E_CONNECT ELK_E_CLOSED ELK_E_IO "
    "ELK_E_NO_RESOURCES ELK_E_TLS_UNKNOWN_CA ELK_E_TLS_HOSTNAME ELK_E_TLS_EXPIRED "
    "ELK_E_TLS_NOT_TLS ELK_E_TLS_HANDSHAKE_CUT ELK_E_TLS_CONFIG ELK_E_TLS_CLIENT_CERT ELK_E_TLS "
    "ELK_E_TLS_VERSION ELK_E_AUTH ELK_E_TIMEOUT ELK_E_NOT_CONNECTED ELK_E_QUEUE_FULL "
    "ELK_E_SERVER_ERROR ELK_E_NOSCRIPT ELK_E_UNEXPECTED_REPLY ELK_E_SELECT ELK_E_DISCONNECTED "
    "ELK_E_LOCK_BUSY ELK_E_FLEET_UNAVAILABLE ELK_E_LOCK_TIMEOUT ELK_E_LOCK_LOST ELK_E_NOT_HELD "
    "ELK_E_TOO_MANY_LOCKS ELK_E_VALIDITY ELK_E_MAX_HOLD ELK_E_UNSAFE_SERVER ELK_E_ENTROPY "
    "ELK_E_LOCK_TAKEN ELK_E_MAX_RENEWALS ELK_E_FLEET_LOST ELK_E_LOCK_ABANDONED ELK_E_LOCK_DELAY "
    "ELK_E_NODE_QUARANTINED ELK_E_CLOCK_JUMP ELK_E_KEEPALIVE_MISSED ELK_E_CLOCK_UNVERIFIED "
    "ELK_E_NODE_AMNESIA ELK_E_FENCE_STALE ELK_E_FENCE_STORAGE ELK_E_FENCE_CORRUPT "
    "ELK_E_FENCE_TOKEN ELK_E_FENCE_BUSY ELK_E_CONFIG ELK_E_CTL_SYNTAX ELK_E_CTL_UNKNOWN "
    "ELK_E_CTL_TOO_LONG ELK_E_RESOURCE_UNKNOWN ELK_E_ALREADY_HELD ELK_E_SHUTTING_DOWN "
    "ELK_E_AGENT_UNREACHABLE ELK_E_AGENT_FULL ELK_E_SIM_QUEUE_FULL ELK_E_FORBIDDEN "
    "ELK_E_CANCELLED ELK_E_SERVER_UNCHECKED ELK_E_SOCKET_SETUP ELK_E_SUPERVISE_DENIED "
    "ELK_E_LOCAL_CLOCK ELK_E_CTL_STALLED ELK_E_PERMITS_TAKEN"
).split()


class ElkError(Exception):
    """An error elkd answered (``ERR <code> <message>``) or one of the client's own.

    ``code`` is the symbolic name (``"ELK_E_LOCK_BUSY"``), ``message`` elkd's text for people.
    """

    code = "ELK_E_UNKNOWN"

    def __init__(self, message="", code=None):
        if code is not None:
            self.code = code
        self.message = message
        super().__init__("%s %s" % (self.code, message) if message else self.code)


def _class_name(code):
    return "".join(w.capitalize() for w in code[len("ELK_E_"):].split("_"))


_CLASSES = {}
for _code in CODES:
    _cls = type(_class_name(_code), (ElkError,), {"code": _code, "__module__": __name__,
                                                   "__doc__": "elkd answered ERR %s." % _code})
    _CLASSES[_code] = _cls
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)
del _code, _cls


# The ones this client raises itself, by name (the loop above made them).
AgentUnreachable = _CLASSES["ELK_E_AGENT_UNREACHABLE"]
Closed = _CLASSES["ELK_E_CLOSED"]
Timeout = _CLASSES["ELK_E_TIMEOUT"]
CtlSyntax = _CLASSES["ELK_E_CTL_SYNTAX"]
State = _CLASSES["ELK_E_STATE"]


class LeaseLost(ElkError):
    """Raised by :meth:`Lease.check` once the lease is lost; ``code`` is the cause."""


def error_class(code):
    """The exception class for a code name (ElkError for a name this client does not know)."""
    return _CLASSES.get(code, ElkError)


def _error(code, message):
    cls = error_class(code)
    return cls(message) if cls is not ElkError else ElkError(message, code)


def boottime_ms():
    """CLOCK_BOOTTIME in ms: the clock of elkd's ``deadline_boottime_ms`` (counts suspend)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * 1000)


def _duration(seconds):
    return "%dms" % max(0, int(round(float(seconds) * 1000)))


class Lease:
    """A granted lease. Attributes:

    - ``resource``: the name elkd granted, which its events and RELEASE use: for a
      ``[semaphore NAME]`` the permit (``"pumps#2"``), else the name asked for,
    - ``semaphore``: the semaphore's name when a permit was granted (``"pumps"``), else None,
    - ``permit``: the permit's name (``"pumps#2"``) when a permit was granted, else None,
    - ``token`` (fencing token, 0 when the resource has ``fencing = off``),
    - ``deadline_ms``: CLOCK_BOOTTIME ms until which the holder may drive (see boottime_ms),
    - ``stop_margin_ms``: what remains on the servers after the deadline,
    - ``lost``: a threading.Event, set on EVENT LOST, EVENT SHUTDOWN or a closed connection,
    - ``cause``: the code name of the loss (``"ELK_E_FLEET_LOST"``...), None while held,
    - ``suspect``: True between EVENT SUSPECT and EVENT RECOVERED (go to a safe position),
    - ``renew_stopped``: the code of EVENT RENEW_STOPPED, else None,
    - ``events``: every EVENT line for this resource, as received.
    """

    def __init__(self, client, resource, fields, on_lost=None, on_event=None):
        self.client = client
        # A semaphore's grant names the permit (docs/control-protocol.md "Semaphores"):
        # events and RELEASE use that name, so the lease goes by it.
        granted = fields[0] if fields and fields[0] else resource
        self.resource = granted
        self.semaphore = resource if granted != resource else None
        self.permit = granted if granted != resource else None
        self.token = 0
        self.deadline_ms = 0
        self.stop_margin_ms = 0
        self.lost = threading.Event()
        self.cause = None
        self.suspect = False
        self.renew_stopped = None
        self.events = []
        self.on_lost = on_lost
        self.on_event = on_event
        self.released = False
        self._grant(fields)

    def _grant(self, fields):
        # <resource> <token> <validity_ms> <stop_margin_ms> [key=value...]
        self.token = int(fields[1])
        validity = int(fields[2])
        self.stop_margin_ms = int(fields[3])
        extra = dict(w.split("=", 1) for w in fields[4:] if "=" in w)
        if "deadline_boottime_ms" in extra:
            self.deadline_ms = int(extra["deadline_boottime_ms"])
        else:  # an older elkd: count the validity from now, the line may have waited
            self.deadline_ms = boottime_ms() + validity

    def remaining(self):
        """Seconds left before the deadline (0 once passed or lost)."""
        if self.lost.is_set():
            return 0.0
        return max(0, self.deadline_ms - boottime_ms()) / 1000.0

    def held(self):
        """True while the lease may drive the actuator: not lost and before its deadline."""
        return not self.lost.is_set() and boottime_ms() < self.deadline_ms

    def check(self):
        """Raise LeaseLost (``code`` = cause) unless held(); return the token otherwise."""
        if self.held():
            return self.token
        raise LeaseLost("lease on %s lost" % self.resource, self.cause or "ELK_E_LOCK_LOST")

    def wait_lost(self, timeout=None):
        """Block until the lease is lost (True) or timeout seconds passed (False)."""
        return self.lost.wait(timeout)

    def keepalive(self):
        """KEEPALIVE: the work is alive (needed with keepalive=...). Raises on ERR."""
        self.client.keepalive(self.resource)

    def status(self):
        """This resource's entry of STATUS JSON (a dict), or None if elkd does not list it."""
        for r in self.client.status().get("resources", []):
            if r.get("name") == self.resource:
                return r
        return None

    def release(self):
        """RELEASE (nothing to do once lost: elkd has forgotten the lease)."""
        if self.released:
            return
        self.released = True
        self.client._leases.pop(self.resource, None)
        if not self.lost.is_set() and not self.client.closed:
            self.client._request("RELEASE " + self.resource)

    def _event(self, word, fields):
        self.events.append(" ".join(["EVENT", word] + fields))
        if word in ("RENEWED", "RECOVERED"):
            self._grant(fields)
            self.suspect = False
        elif word == "SUSPECT":
            self.suspect = True
        elif word == "RENEW_STOPPED":
            self.renew_stopped = fields[1] if len(fields) > 1 else "ELK_E_UNKNOWN"
        if self.on_event is not None:
            self.on_event(self, word, fields)
        if word == "LOST":
            self._lose(fields[1] if len(fields) > 1 else "ELK_E_LOCK_LOST")

    def _lose(self, cause):
        if self.lost.is_set():
            return
        self.cause = cause
        self.lost.set()
        if self.on_lost is not None:
            self.on_lost(self, cause)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def __repr__(self):
        return "<Lease %s token=%d %s>" % (self.resource, self.token,
                                           "lost:%s" % self.cause if self.lost.is_set() else
                                           "%.3fs left" % self.remaining())


class Client:
    """One connection to elkd. ``timeout``: seconds to wait for an answer beyond an
    ACQUIRE's own wait (elkd answers every request; a silent elkd raises Timeout and the
    connection is closed, since later answers could no longer be matched)."""

    def __init__(self, path=None, timeout=30.0):
        self.path = path or os.environ.get("ELK_SOCKET") or DEFAULT_SOCKET
        self.timeout = timeout
        self.closed = False
        self._leases = {}
        self._replies = []
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(self.path)
        except OSError as e:
            self._sock.close()
            raise AgentUnreachable("cannot connect to elkd at %s: %s (is elkd running, and may "
                                   "this user open its socket?)" % (self.path, e.strerror)) from e
        self._reader = threading.Thread(target=self._read_loop, name="edgelock-reader",
                                        daemon=True)
        self._reader.start()

    # ------------------------------------------------------------------ requests
    def acquire(self, resource, wait=0, keepalive=None, on_lost=None, on_event=None):
        """ACQUIRE: a Lease, or an ElkError subclass (LockBusy, LockTimeout, ...).

        ``wait``: seconds to wait for the resource (0: one attempt); ``keepalive``: seconds
        within which lease.keepalive() must be called for renewals to go on;
        ``on_lost(lease, cause)`` and ``on_event(lease, word, fields)`` run in the reader
        thread."""
        line = "ACQUIRE %s %s" % (resource, _duration(wait))
        if keepalive:
            line += " keepalive=" + _duration(keepalive)
        # The lease object exists before the answer is read, so no event that follows the
        # grant in the same read can miss it.
        lease_obj = self._request(line, extra=float(wait), grant=(resource, on_lost, on_event))
        if lease_obj is None:
            raise CtlSyntax("elkd answered ACQUIRE without a grant")
        # (a LOST read right behind the grant is already applied: lease_obj.lost is set)
        return lease_obj

    def release(self, resource):
        """RELEASE by name: a resource, a permit (``"pumps#2"``) or a semaphore (``"pumps"``:
        the permit this connection holds). Also cancels a waiting ACQUIRE sent from another
        thread."""
        lease_obj = self._leases.get(resource) or next(
            (l for l in self._leases.values() if l.semaphore == resource), None)
        if lease_obj is not None:
            lease_obj.release()
        else:
            self._request("RELEASE " + resource)

    def keepalive(self, resource):
        """KEEPALIVE by name (Lease.keepalive is the same). Raises NotHeld, KeepaliveMissed."""
        self._request("KEEPALIVE " + resource)

    def status(self):
        """STATUS JSON as a dict (agent, resources, nodes; docs/control-protocol.md)."""
        return json.loads(self._request("STATUS JSON", word="JSON"))

    def ping(self):
        """PING: True when elkd answers OK PONG."""
        self._request("PING")
        return True

    def close(self):
        """Close the connection: elkd releases everything it held."""
        if self.closed:
            return
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._reader.join(5)
        self._closed("ELK_E_CLOSED")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ------------------------------------------------------------------ internals
    def _request(self, line, extra=0.0, word=None, grant=None):
        if self.closed:
            raise Closed("connection to elkd is closed")
        if threading.current_thread() is self._reader:
            # the answer could only be read by this very thread: it would wait for itself
            raise State("a request from an on_lost/on_event callback would wait for itself; "
                        "set an Event there and act in your own thread")
        with self._send_lock:
            with self._cond:
                slot = {"grant": grant}
                self._replies.append(slot)
            try:
                self._sock.sendall(line.encode() + b"\n")
            except OSError as e:
                self._closed("ELK_E_CLOSED")
                raise Closed("elkd closed the connection: %s" % e) from e
        with self._cond:
            ok = self._cond.wait_for(lambda: "reply" in slot or self.closed,
                                     self.timeout + extra)
        if "reply" not in slot:
            if not ok:
                self.close()
                raise Timeout("no answer from elkd to %r within %.0f s" %
                              (line, self.timeout + extra))
            raise Closed("elkd closed the connection before answering %r" % line)
        kind, rest = slot["reply"]
        if kind == "ERR":
            code, _, msg = rest.partition(" ")
            raise _error(code, msg)
        if grant is not None:
            return slot.get("lease")
        return rest if word is None else rest.partition(" ")[2]

    def _read_loop(self):
        buf = b""
        pending_lines = 0
        try:
            while True:
                data = self._sock.recv(65536)
                if not data:
                    break
                buf += data
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    line = raw.decode("ascii", "replace").rstrip("\r")
                    if pending_lines:
                        pending_lines -= 1
                        self._body.append(line)
                        if pending_lines == 0:
                            self._answer("OK", "\n".join(self._body))
                        continue
                    try:
                        pending_lines = self._line(line)
                    except (ValueError, IndexError):
                        # a line this client cannot read: still an answer (elkd answers
                        # every request once), so the request waiting for it fails
                        self._answer("ERR", "ELK_E_CTL_SYNTAX unreadable line from elkd: "
                                     + line[:200])
        except OSError:
            pass
        self._closed("ELK_E_CLOSED")

    def _line(self, line):
        kind, _, rest = line.partition(" ")
        if kind == "EVENT":
            self._on_event(rest.split())
            return 0
        words = rest.split()
        if kind == "OK" and len(words) == 2 and words[0] in ("STATUS", "METRICS") \
                and words[1].isdigit() and int(words[1]) > 0:
            self._body = [rest]  # OK STATUS <n>, then n lines
            return int(words[1])
        if kind == "OK" and words and words[0] == "ACQUIRED":
            self._on_grant(words[1:])
        self._answer(kind, rest)
        return 0

    def _answer(self, kind, rest):
        with self._cond:
            for slot in self._replies:
                if "reply" not in slot:
                    slot["reply"] = (kind, rest)
                    self._replies.remove(slot)
                    break
            self._cond.notify_all()

    def _on_grant(self, fields):
        with self._cond:
            slot = next((s for s in self._replies if "reply" not in s), None)
        if slot is None or slot["grant"] is None:
            return
        resource, on_lost, on_event = slot["grant"]
        lease_obj = Lease(self, resource, fields, on_lost, on_event)
        slot["lease"] = self._leases[lease_obj.resource] = lease_obj

    def _on_event(self, words):
        if not words:
            return
        if words[0] == "SHUTDOWN":
            for lease_obj in list(self._leases.values()):
                lease_obj._event("SHUTDOWN", [lease_obj.resource, "ELK_E_SHUTTING_DOWN"])
                lease_obj._lose("ELK_E_SHUTTING_DOWN")
            return
        lease_obj = self._leases.get(words[1]) if len(words) > 1 else None
        if lease_obj is not None:
            lease_obj._event(words[0], words[1:])
            if words[0] == "LOST":
                self._leases.pop(lease_obj.resource, None)

    def _closed(self, cause):
        with self._cond:
            self.closed = True
            self._cond.notify_all()
        for lease_obj in list(self._leases.values()):
            lease_obj._lose(cause)


class lease:  # noqa: N801 - used like a function: `with edgelock.lease(...) as l:`
    """``with lease(resource, wait=0, keepalive=None, socket=None, on_lost=None) as l:``

    Opens its own connection, acquires, and on leaving releases and closes (closing alone
    would release too). Raises the ElkError subclass of elkd's answer if not granted."""

    def __init__(self, resource, wait=0, keepalive=None, socket=None, on_lost=None,
                 on_event=None, timeout=30.0):
        self._args = (resource, wait, keepalive, on_lost, on_event)
        self._path = socket
        self._timeout = timeout
        self.client = None
        self.lease = None

    def __enter__(self):
        self.client = Client(self._path, self._timeout)
        resource, wait, keepalive, on_lost, on_event = self._args
        try:
            self.lease = self.client.acquire(resource, wait, keepalive, on_lost, on_event)
        except BaseException:
            self.client.close()
            raise
        return self.lease

    def __exit__(self, *exc):
        try:
            if not self.client.closed:
                self.lease.release()
        except ElkError:
            pass  # lost meanwhile, or elkd went away: closing releases whatever is left
        finally:
            self.client.close()
        return False
