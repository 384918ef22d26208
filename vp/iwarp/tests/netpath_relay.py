#!/usr/bin/env python3
# A fault-injecting TCP relay for netpath-test.sh: accepts one connection on
# LISTEN_PORT (127.0.0.1), connects to TARGET_HOST:TARGET_PORT and copies both
# ways, then, once AFTER bytes went through (both directions counted):
#
#   pass       nothing
#   delay      holds every chunk PARAM ms before passing it on
#   onebyte    passes everything one byte per send() (TCP_NODELAY: one segment each)
#   stall      stops reading and passing for PARAM seconds, then goes on
#   reset      resets both connections (SO_LINGER 0)
#   blackhole  stops reading and passing, and never closes: a silent black hole
#
# delay and onebyte apply from the start (AFTER is ignored).  When the fault
# fires, its CLOCK_BOOTTIME in seconds is written to FAULT_FILE.  Small
# socket buffers (64 KiB) make a stopped relay close the senders' windows
# soon.  Every wait is bounded; the relay ends by itself after 120 s.
#
# SPDX-License-Identifier: MIT
import select
import socket
import struct
import sys
import time

BUF = 65536


def main():
    lport, thost, tport, mode, after, param, fault_file = sys.argv[1:8]
    lport, tport, after, param = int(lport), int(tport), int(after), float(param)
    end = time.monotonic() + 120

    def small(s):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, BUF)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, BUF)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    small(ls)
    ls.bind(("127.0.0.1", lport))
    ls.listen(1)
    print("relay: listening", flush=True)
    ls.settimeout(60)
    a, _ = ls.accept()
    b = socket.socket()
    small(b)
    b.settimeout(10)
    b.connect((thost, tport))
    a.setblocking(True)
    b.setblocking(True)
    peer = {a: b, b: a}
    moved = 0
    fired = False

    def fire():
        with open(fault_file, "w") as f:
            f.write("%.6f\n" % time.clock_gettime(time.CLOCK_BOOTTIME))
        print("relay: %s after %d bytes" % (mode, moved), flush=True)

    while time.monotonic() < end:
        if not fired and mode in ("stall", "reset", "blackhole") and moved >= after:
            fired = True
            fire()
            if mode == "reset":
                for s in (a, b):
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.close()
                return
            if mode == "blackhole":
                time.sleep(max(0, end - time.monotonic()))
                return
            time.sleep(param)
        r, _, _ = select.select([a, b], [], [], 0.5)
        for s in r:
            try:
                data = s.recv(BUF)
            except OSError:
                data = b""
            if not data:
                return
            moved += len(data)
            if mode == "delay":
                time.sleep(param / 1000)
            if mode == "onebyte":
                for i in range(len(data)):
                    peer[s].sendall(data[i:i + 1])
            else:
                peer[s].sendall(data)


if __name__ == "__main__":
    main()
