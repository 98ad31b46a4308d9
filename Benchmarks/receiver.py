#!/usr/bin/env python3
"""What the receiver adds to the latency, and what it costs while the pointer moves, side by side
for each `--bin` given (a build before and after: its `share-recv` is measured; the first build's
`share-send` sends to all).

Two virtual displays: the sender's, and the viewer's, where `share recv` shows the picture in its
window. Runs alternate between the builds, `--runs` times each:
- moving: `share scene --stamp` redrawn at `--scene-rate` on the sender's display, sent for
  `--seconds` (static key, no audio) with the pointer drawn in (`--cursor embed`) and sent apart
  (`--cursor metadata`, drawn by the receiver); reports the receiver's last packet to display and
  capture to display (p50 / p95), glass-to-glass p50, and pictures converted for the window while
  their last slices came (`framesConvertedEarly`) of those shown;
- pointer: a still screen (`share scene --static`), the pointer sent apart and moved as a mouse
  moves it (XTest, every 10 ms) for `--seconds`: the receiver's CPU (user + system, % of a core).

    python3 Benchmarks/receiver.py --bin .build/release --bin /tmp/old
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import DEFAULT_BIN, TICK, free_port, make_key, receiver_sdp, start_xvfb, stop, write_results, write_secret  # noqa: E402
from pointer import Mouse  # noqa: E402


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def one_run(receiver_bin, sender_bin, mode, args, key, work, sender_display, viewer_display, mouse):
    port = free_port()
    sdp = os.path.join(work, "recv.sdp")
    write_secret(sdp, receiver_sdp(port, key, False))
    stats = os.path.join(work, "recv.json")
    if os.path.exists(stats):
        os.remove(stats)
    receiver = subprocess.Popen([os.path.join(receiver_bin, "share-recv"), "recv", "--sdp", sdp, "--display", viewer_display,
                                 "--read-stamps", "--no-audio", "--duration", str(args.seconds + 30), "--stats-json", stats],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    cursor = "embed" if mode == "embed" else "metadata"
    sender = subprocess.Popen([os.path.join(sender_bin, "share-send"), "send", "127.0.0.1", "--port", str(port),
                               "--display", sender_display, "--srtp-key-file", key["file"], "--audio", "none",
                               "--cursor", cursor], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    row = {"bin": receiver_bin, "mode": mode}
    try:
        time.sleep(2)
        if mode == "pointer":
            before, began, moves = cpu_seconds(receiver.pid), time.monotonic(), 0
            while time.monotonic() - began < args.seconds:
                moves += 1
                mouse.move(200 + (moves * 7) % 1400, 150 + (moves * 3) % 700)
                time.sleep(0.01)
            row.update(cpuPercent=100 * (cpu_seconds(receiver.pid) - before) / (time.monotonic() - began), moves=moves)
        else:
            time.sleep(args.seconds)
    finally:
        stop(sender)
        time.sleep(0.3)
        stop(receiver, timeout=20)
    if mode != "pointer":
        with open(stats) as f:
            got = json.load(f)
        row.update(lastPacketToDisplayP50=got["lastPacketToDisplay"].get("p50"),
                   lastPacketToDisplayP95=got["lastPacketToDisplay"].get("p95"),
                   captureToDisplayP50=got["captureToDisplay"].get("p50"), g2gP50=got.get("glassToGlass", {}).get("p50"),
                   shown=got["framesShown"], convertedEarly=got.get("framesConvertedEarly"))
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", action="append", help="a folder with share-recv (and share-send; repeat to compare builds)")
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--scene-rate", type=int, default=59)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = parser.parse_args()
    binaries = args.bin or [DEFAULT_BIN]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        key = make_key(work)
        for mode in ("embed", "metadata", "pointer"):
            sender_display, sender_xvfb = start_xvfb(args.size)
            viewer_display, viewer_xvfb = start_xvfb(args.size, (sender_display,))
            scene_args = ["--static"] if mode == "pointer" else ["--fps", str(args.scene_rate), "--stamp", "--stamp-rate",
                                                                 str(args.scene_rate)]
            scene = subprocess.Popen([os.path.join(binaries[0], "share-send"), "scene", "--display", sender_display,
                                      *scene_args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            mouse = Mouse(sender_display)
            mouse.move(400, 300)
            try:
                for run in range(args.runs):
                    for binary in binaries:
                        print(f"receiver: {mode} {binary} ({run + 1}/{args.runs})", file=sys.stderr, flush=True)
                        rows.append(one_run(binary, binaries[0], mode, args, key, work, sender_display, viewer_display, mouse))
            finally:
                mouse.close()
                stop(scene)
                stop(sender_xvfb)
                stop(viewer_xvfb)

    def median(mode, binary, key):
        values = [r[key] for r in rows if r["mode"] == mode and r["bin"] == binary and r.get(key) is not None]
        return statistics.median(values) if values else None

    def fmt(value, digits=2):
        return "-" if value is None else f"{value:.{digits}f}"

    lines = [f"# The receiver: {args.size}, scene at {args.scene_rate} Hz, {args.seconds:.0f} s a run, medians of "
             f"{args.runs} alternating runs ({time.strftime('%Y-%m-%d %H:%M')})", "",
             "| pointer | build | last packet to display p50 / p95 ms | capture to display p50 ms | "
             "glass-to-glass p50 ms | converted early / shown |", "|---|---|---|---|---|---|"]
    for mode in ("embed", "metadata"):
        for binary in binaries:
            early = [f"{r['convertedEarly']}/{r['shown']}" for r in rows
                     if r["mode"] == mode and r["bin"] == binary and r.get("convertedEarly") is not None]
            lines.append(f"| {mode} | {binary} | {fmt(median(mode, binary, 'lastPacketToDisplayP50'))} / "
                         f"{fmt(median(mode, binary, 'lastPacketToDisplayP95'))} | "
                         f"{fmt(median(mode, binary, 'captureToDisplayP50'))} | {fmt(median(mode, binary, 'g2gP50'))} | "
                         f"{', '.join(early) or '-'} |")
    lines += ["", "| the pointer moving over a still screen | build | receiver CPU, % of a core (each run) |", "|---|---|---|"]
    for binary in binaries:
        each = [fmt(r["cpuPercent"], 1) for r in rows if r["mode"] == "pointer" and r["bin"] == binary]
        lines.append(f"| sent apart, every 10 ms | {binary} | {', '.join(each)} |")
    text = "\n".join(lines) + "\n"
    write_results(args.out, "receiver", rows, text)


if __name__ == "__main__":
    main()
