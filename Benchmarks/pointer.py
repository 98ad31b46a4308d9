#!/usr/bin/env python3
"""How soon the pointer's first move after a rest leaves the sender.

Runs the release `share-send` (static key, no audio) on a still virtual
screen against a UDP sink, lets the pointer rest, then moves it as the mouse
does (XTest, through libXtst) and times, on the monotonic clock, from the
move to the first packet that carries it: the first video RTP packet with
the pointer drawn in (`--cursor embed`, a new picture), the first RTCP APP
packet (its position) with the pointer sent apart (`--cursor metadata`).
Each move comes after the pointer has been still for `--rest` seconds and
no picture has left for 0.3 s (the still screen's refresh pictures), to a
new place each time. Reports the median and the worst of `--moves` moves
per mode, side by side for each `--bin` given (a build before and after).

    make bench-capture
    python3 Benchmarks/pointer.py --bin .build/release --bin /tmp/old
"""
import argparse
import ctypes
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import DEFAULT_BIN, make_key, start_xvfb, stop, write_results  # noqa: E402

MODES = {"embed": ["--cursor", "embed"], "metadata": ["--cursor", "metadata"]}


class Mouse:
    """The pointer moved through XTest, as a mouse (or a remote-control tool) moves it."""

    def __init__(self, display):
        self.x11 = ctypes.CDLL("libX11.so.6")
        self.xtst = ctypes.CDLL("libXtst.so.6")
        self.x11.XOpenDisplay.restype = ctypes.c_void_p
        self.x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        self.x11.XFlush.argtypes = [ctypes.c_void_p]
        self.x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
        self.xtst.XTestFakeMotionEvent.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_ulong]
        self.display = self.x11.XOpenDisplay(display.encode())
        if not self.display:
            raise SystemExit(f"pointer: cannot open {display}")

    def move(self, x, y):
        self.xtst.XTestFakeMotionEvent(self.display, -1, x, y, 0)
        self.x11.XFlush(self.display)

    def close(self):
        self.x11.XCloseDisplay(self.display)


# An RTCP APP packet holding the pointer's position (`SHCP`, 13 bytes of data padded to 16): 7 words,
# its length field 6. SRTCP encrypts the name; the header stays in the clear, and the sender's state
# announcements (`SHST`, also APP) are shorter.
POSITION_LENGTH = 6


def carries_move(packet, mode):
    """Whether a packet is the move's: a video RTP packet (embed) or the pointer's position, first in its datagram (metadata)."""
    if len(packet) < 12 or packet[0] >> 6 != 2:
        return False
    rtcp = 200 <= packet[1] <= 206
    if mode == "metadata":
        return packet[1] == 204 and int.from_bytes(packet[2:4], "big") == POSITION_LENGTH
    return not rtcp


def run(binary, mode, args, key):
    display, xvfb = start_xvfb("1920x1080")
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    scene = subprocess.Popen([os.path.join(binary, "share-send"), "scene", "--display", display, "--static"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    mouse = Mouse(display)
    mouse.move(200, 200)
    sender = subprocess.Popen([os.path.join(binary, "share-send"), "send", "127.0.0.1", "--port", str(sink.getsockname()[1]),
                               "--display", display, "--srtp-key-file", key["file"], "--audio", "none",
                               "--duration", str(3 + args.moves * (args.rest + 1.5))] + MODES[mode],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    delays = []
    try:
        time.sleep(2)
        for n in range(args.moves):
            # The pointer rests, and no picture has left for a while.
            moved = time.monotonic()
            last_picture = moved
            while time.monotonic() - moved < args.rest or time.monotonic() - last_picture < 0.3:
                sink.settimeout(0.05)
                try:
                    if carries_move(sink.recv(2048), "embed"):
                        last_picture = time.monotonic()
                except socket.timeout:
                    pass
            mouse.move(300 + 40 * (n % 20), 300 + 25 * (n % 7))
            moved = time.monotonic()
            sink.settimeout(1.0)
            try:
                while not carries_move(sink.recv(2048), mode):
                    pass
                delays.append(1000 * (time.monotonic() - moved))
            except socket.timeout:
                delays.append(None)
    finally:
        mouse.close()
        stop(sender)
        stop(scene)
        stop(xvfb)
        sink.close()
    seen = [d for d in delays if d is not None]
    return {"bin": binary, "mode": mode, "moves": len(delays), "missed": len(delays) - len(seen),
            "p50Ms": statistics.median(seen) if seen else None, "maxMs": max(seen) if seen else None,
            "delaysMs": [None if d is None else round(d, 2) for d in delays]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", action="append", help="a folder with share-send (repeat to compare builds)")
    parser.add_argument("--moves", type=int, default=12)
    parser.add_argument("--rest", type=float, default=1.5)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = parser.parse_args()
    binaries = args.bin or [DEFAULT_BIN]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        key = make_key(work)
        for mode in MODES:
            for binary in binaries:
                print(f"pointer: {mode} {binary}", file=sys.stderr, flush=True)
                rows.append(run(binary, mode, args, key))
    lines = [f"# The pointer's first move after a rest of {args.rest:.1f} s: from the move (XTest) to its first packet",
             "", "| pointer | build | moves | p50 ms | worst ms | missed |", "|---|---|---|---|---|---|"]
    for r in rows:
        p50 = "–" if r["p50Ms"] is None else f"{r['p50Ms']:.1f}"
        worst = "–" if r["maxMs"] is None else f"{r['maxMs']:.1f}"
        lines.append(f"| {r['mode']} | {r['bin']} | {r['moves']} | {p50} | {worst} | {r['missed']} |")
    text = "\n".join(lines) + "\n"
    write_results(args.out, "pointer", rows, text)


if __name__ == "__main__":
    main()
