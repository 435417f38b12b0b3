#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The scenarios' actuator: its own process, apart from every gateway (see lib.sh act_init).

    actuator.py serve SOCKET ELK            listen on a Unix socket (until killed)
    actuator.py client GATEWAY TICKS TICK   a holder's command (work.sh execs it): with env
                                            ACT_SOCK, ACT_LOG, ACT_STATE, ELK_FENCE_TOKEN

A real actuator does not freeze with a gateway: the gateway only sends it steps. So a holder's
command connects here and sends one request line per event,
    start|tick|stop GATEWAY TOKEN STATE LOG
and the actuator runs each tick on its own side, checked and acted on under one hold of the
guard (`elk guard --state STATE TOKEN -- <log the tick>`), the way docs/guard.md says an
actuator must. SIGSTOP of a gateway (its elkd, elk run and command) stops at most the sending
of steps, never a step that holds the guard. Each connection has its own thread, so steps of
two gateways reach the guard concurrently and the guard alone orders them.

The log (LOG) has the format lib.sh documents, every time the actuator's own (true time):
    <ns> <gateway> <token> <start|tick|stop> <accepted|refused|->
An accepted tick's line is written by the step itself, inside the guard's hold; a refused one
after the guard returned. Whatever `elk guard` says on stderr (why it refused, who held the
guard while it waited) goes to SOCKET's directory, guard.err, with the time it was read.
The client answers SIGTERM (elk run stopping its command) with a stop line and exit 143 (a
SIGTERM ignored when it starts stays ignored, as a shell's trap would leave it);
TICKS > 0 ends after that many ticks with exit 0; TICK is the pause between ticks (s).
"""
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time

STEP = 't=${EPOCHREALTIME/./}; echo "${t}000 $1 $2 tick accepted" >> "$3"'


def log_line(path, gw, tok, ev, res):
    line = f"{time.time_ns()} {gw} {tok} {ev} {res}\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for raw in self.rfile:
            p = raw.decode(errors="replace").split()
            if len(p) != 5:
                self.wfile.write(b"error\n")
                continue
            ev, gw, tok, state, log = p
            if ev == "tick":
                res = self.server.tick(gw, tok, state, log)
            else:
                log_line(log, gw, tok, ev, "-")
                res = "ok"
            self.wfile.write(res.encode() + b"\n")
            self.wfile.flush()


class Actuator(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path, elk):
        super().__init__(path, Handler)
        self.elk = elk
        self.err = os.path.join(os.path.dirname(path), "guard.err")
        self.err_lock = threading.Lock()

    def tick(self, gw, tok, state, log):
        cmd = [self.elk, "guard", "--state", state, tok, "--", "bash", "-c", STEP, "_", gw, tok, log]
        env = dict(os.environ)
        env.pop("ELK_LEASE_FILE", None)  # the gateway's file: not on the actuator's side
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, env=env)
        if r.stderr:
            with self.err_lock, open(self.err, "a") as f:
                for line in r.stderr.decode(errors="replace").splitlines():
                    f.write(f"{time.time_ns()} {gw} {tok} {line}\n")
        if r.returncode == 0:
            return "accepted"
        log_line(log, gw, tok, "tick", "refused")
        return "refused"


def serve(path, elk):
    if os.path.exists(path):
        os.unlink(path)
    srv = Actuator(path, elk)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    srv.serve_forever()


def client(gw, ticks, tick):
    tok = os.environ.get("ELK_FENCE_TOKEN", "0") or "0"
    state, log = os.environ["ACT_STATE"], os.environ["ACT_LOG"]
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        # ignored on entry (a hung program, s12's ignore-term): stays ignored, as in a shell
        if signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, lambda *_: stopping.append(1))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.environ["ACT_SOCK"])
    f = s.makefile("rwb")

    def send(ev):
        f.write(f"{ev} {gw} {tok} {state} {log}\n".encode())
        f.flush()
        return f.readline().decode().strip()

    send("start")
    i = 0
    while not stopping:
        send("tick")
        i += 1
        if ticks > 0 and i >= ticks:
            break
        end = time.monotonic() + tick
        while not stopping and time.monotonic() < end:
            time.sleep(min(0.01, max(0.0, end - time.monotonic())))
    send("stop")
    return 143 if stopping else 0


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "serve":
        serve(a[1], a[2])
        return 0
    if len(a) == 4 and a[0] == "client":
        return client(a[1], int(a[2]), float(a[3]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
