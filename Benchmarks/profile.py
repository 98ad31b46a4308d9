#!/usr/bin/env python3
"""Where the sender's CPU goes: perf samples of the release `share-send`.

Starts a virtual display with `share scene` (moving content, or --static),
optionally a PulseAudio daemon of its own with a sine playing (--audio
system), and `share send` to a UDP sink (static key); after a warm-up it
records the sender with `perf record` for --seconds and writes, to
results/profile-<case>.md, the share of samples per library (x264, libyuv,
the kernel…), the sender's own functions, and what the kernel time is spent
waiting in. perf must be installed and allowed to sample the process.

    python3 Benchmarks/profile.py --size 1280x720
    python3 Benchmarks/profile.py --size 1280x720 --static --audio system
"""
import argparse
import collections
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture import start_sound  # noqa: E402
from harness import DEFAULT_BIN, make_key, start_xvfb, stop  # noqa: E402


def record(args, work):
    key = make_key(work)
    display, xvfb = start_xvfb(args.size)
    sound, env = start_sound(work) if args.audio == "system" else (None, None)
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    binary = os.path.join(args.bin, "share-send")
    scene = subprocess.Popen([binary, "scene", "--display", display] + (["--static"] if args.static else []),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    sender = subprocess.Popen([binary, "send", "127.0.0.1", "--port", str(sink.getsockname()[1]), "--display", display,
                               "--srtp-key-file", key["file"], "--audio", args.audio,
                               "--duration", str(args.warmup + args.seconds + 5)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    data = os.path.join(work, "perf.data")
    try:
        time.sleep(args.warmup)
        subprocess.run(["perf", "record", "-F", "2000", "-g", "-o", data, "-p", str(sender.pid), "--",
                        "sleep", str(args.seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    finally:
        for process in (sender, scene, xvfb, sound):
            stop(process)
        sink.close()
    script = subprocess.run(["perf", "script", "-i", data, "-F", "tid,ip,sym,dso"], capture_output=True, text=True)
    return [[line.strip() for line in block.strip().split("\n") if line.strip()]
            for block in script.stdout.split("\n\n") if block.strip()]


def frame(line):
    """(symbol, library) of one stack line of `perf script`."""
    match = re.search(r"\s(\S+) \((\S+)\)$", line)
    if not match:
        return line, "?"
    return match.group(1), os.path.basename(match.group(2))


def summarize(samples, args):
    libraries, own, waits, callers = (collections.Counter(), collections.Counter(), collections.Counter(),
                                      collections.Counter())
    for stack in samples:
        if len(stack) < 2:
            continue
        symbol, library = frame(stack[1])
        libraries["kernel" if "kernel" in library else library] += 1
        if library == "share-send":
            own[symbol] += 1
        if "kernel" in library:
            # The first user-space frame: what the thread was doing in the kernel for.
            for line in stack[2:]:
                caller, where = frame(line)
                if "kernel" not in where:
                    waits[f"{caller} ({where})"] += 1
                    break
            # And the sender's own function that made that call (which loop waits).
            for line in stack[2:]:
                caller, where = frame(line)
                if where == "share-send":
                    callers[caller] += 1
                    break
    total = max(1, len(samples))
    lines = [f"# Where the sender's CPU goes: {args.size}, {'still' if args.static else 'moving'} screen, "
             f"audio {args.audio}", "",
             f"`python3 Benchmarks/profile.py --size {args.size}{' --static' if args.static else ''} --audio {args.audio}` "
             f"(release `share-send`, `perf record -F 2000 -g` for {args.seconds:.0f} s after {args.warmup:.0f} s; "
             f"{len(samples)} samples, {len(samples) / 2000 / args.seconds * 100:.1f}% of a core with perf's own cost).", "",
             "| library | share of samples |", "|---|---|"]
    lines += [f"| {name} | {100 * count / total:.1f}% |" for name, count in libraries.most_common(10)]
    lines += ["", "The sender's own functions (top 10):", "", "| function | share |", "|---|---|"]
    lines += [f"| `{name[:100]}` | {100 * count / total:.2f}% |" for name, count in own.most_common(10)]
    lines += ["", "Kernel time, by the user-space call that entered it (top 10):", "", "| call | share |", "|---|---|"]
    lines += [f"| `{name[:100]}` | {100 * count / total:.2f}% |" for name, count in waits.most_common(10)]
    lines += ["", "Kernel time, by the sender's function that made the call (top 10):", "", "| function | share |",
              "|---|---|"]
    lines += [f"| `{name[:100]}` | {100 * count / total:.2f}% |" for name, count in callers.most_common(10)]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--static", action="store_true", help="a still screen (default: moving content)")
    parser.add_argument("--audio", default="none", choices=["none", "system"])
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--bin", default=DEFAULT_BIN)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        text = summarize(record(args, work), args)
    case = f"{args.size}-{'still' if args.static else 'moving'}" + ("-audio" if args.audio != "none" else "")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"profile-{case}.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
