#!/usr/bin/env python3
"""The hostile soak: `share send` to `share recv --record` on loopback for a
long time (default 30 minutes) while strangers flood the receiver's port with
garbage datagrams and handshake commits (40 forged source addresses, and
reveals and proofs under made-up handshake ids). Both processes' footprint
(RssAnon + RssShmem), RSS and CPU are sampled every 5 s.

Verdicts: memory flat (each process's peak in the last five minutes within
1 MiB of its peak in minutes 5-10), CPU flat (each process's CPU per second
in the last five minutes within 20% of minutes 5-10), and nothing lost from
the recording (every frame decoded was recorded, and ffprobe reads back
every frame recorded).

Needs a release build (`make demo` builds one). Usage:
    python3 Benchmarks/hostile_soak.py [--seconds 1800] [--out Benchmarks/results]
"""
import argparse, json, os, random, socket, struct, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1] & ~1


def free_display():
    for n in range(180, 260):
        if not os.path.exists(f"/tmp/.X11-unix/X{n}") and not os.path.exists(f"/tmp/.X{n}-lock"):
            return n
    raise RuntimeError("no free X display")


def memory(pid):
    """(footprint KiB, RSS KiB) of a process, from /proc/PID/status."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.split()[0] if value.split() else "0"
    return int(fields.get("RssAnon", 0)) + int(fields.get("RssShmem", 0)), int(fields.get("VmRSS", 0))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def handshake_header(kind, ident):
    return b"SH" + bytes([2, kind]) + struct.pack(">Q", ident)


def commit(rng):
    """A well-formed commit (version 2) under a random id: answered with a cookie."""
    m = handshake_header(1, rng.getrandbits(64)) + struct.pack(">Q", rng.getrandbits(64)) + bytes([1, rng.choice([1, 2])])
    m += rng.randbytes(64) + bytes(32)
    return m + bytes(192 - len(m))


def forged(rng):
    """A reveal or a proof under a made-up handshake id: ignored."""
    if rng.random() < 0.5:
        m = handshake_header(4, rng.getrandbits(64)) + rng.randbytes(64) + bytes([5]) + b"x@y.z"
        return m + bytes(128 - len(m))
    return handshake_header(6, rng.getrandbits(64)) + bytes([0]) + rng.randbytes(32)


def flood(port, stop, counts, per_second):
    """Garbage and handshake messages at `per_second` of each until `stop` is set."""
    rng = random.Random(40)
    target = ("127.0.0.1", port)
    sources = []
    for n in range(2, 42):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((f"127.0.0.{n}", 0))
        sources.append(s)
    tick = 0.05
    while not stop.is_set():
        started = time.monotonic()
        for _ in range(int(per_second * tick)):
            garbage = bytearray(rng.randbytes(rng.randint(1, 1400)))
            if rng.random() < 0.5:
                garbage[0] = 0x80 | (garbage[0] & 0x3F)
            rng.choice(sources).sendto(bytes(garbage), target)
            rng.choice(sources).sendto(commit(rng), target)
            rng.choice(sources).sendto(forged(rng), target)
            counts["garbage"] += 1
            counts["commits"] += 1
            counts["forged"] += 1
        time.sleep(max(0, tick - (time.monotonic() - started)))


def window_peak(samples, index, lo, hi):
    values = [s[index] for s in samples if lo <= s[0] < hi]
    return max(values) if values else float("nan")


def window_rate(samples, index, lo, hi):
    inside = [s for s in samples if lo <= s[0] < hi]
    if len(inside) < 2:
        return float("nan")
    return (inside[-1][index] - inside[0][index]) / (inside[-1][0] - inside[0][0])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=1800)
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--flood", type=int, default=200, help="garbage datagrams, commits and forgeries a second, each")
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    parser.add_argument("--out", default=os.path.join(ROOT, "Benchmarks", "results"))
    args = parser.parse_args()
    share = os.path.join(args.bin, "share")
    work = tempfile.mkdtemp(prefix="share-soak-")
    env = dict(os.environ, HOME=work, XDG_RUNTIME_DIR=work, XDG_CONFIG_HOME=os.path.join(work, "config"))
    width, height = args.size.split("x")
    port, display = free_port(), free_display()
    key = os.path.join(work, "soak.key")
    subprocess.run([share, "keygen", key], check=True, env=env, stdout=subprocess.DEVNULL)
    processes = []
    try:
        processes.append(subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        processes.append(subprocess.Popen([share, "scene", "--display", f":{display}"], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        recording = os.path.join(work, "soak.mkv")
        receiver = subprocess.Popen([share, "recv", "--port", str(port), "--key-file", key, "--no-window", "--no-audio",
                                     "--record", recording, "--duration", str(args.seconds + 6),
                                     "--stats-json", os.path.join(work, "recv.json")], env=env,
                                    stdout=open(os.path.join(work, "recv.log"), "w"), stderr=subprocess.STDOUT)
        processes.append(receiver)
        time.sleep(0.5)
        sender = subprocess.Popen([share, "send", "127.0.0.1", "--port", str(port), "--display", f":{display}", "--key-file", key,
                                   "--audio", "none", "--duration", str(args.seconds),
                                   "--stats-json", os.path.join(work, "send.json")], env=env,
                                  stdout=open(os.path.join(work, "send.log"), "w"), stderr=subprocess.STDOUT)
        processes.append(sender)
        stop, counts = threading.Event(), {"garbage": 0, "commits": 0, "forged": 0}
        flooding = threading.Thread(target=flood, args=(port, stop, counts, args.flood), daemon=True)
        time.sleep(2)
        flooding.start()
        samples = []  # (t, send footprint, send rss, send cpu, recv footprint, recv rss, recv cpu) in KiB and s
        began = time.monotonic()
        while sender.poll() is None:
            try:
                sf, sr = memory(sender.pid)
                rf, rr = memory(receiver.pid)
                samples.append((time.monotonic() - began, sf, sr, cpu_seconds(sender.pid), rf, rr, cpu_seconds(receiver.pid)))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
            time.sleep(5)
        stop.set()
        flooding.join()
        receiver.wait(timeout=60)
        sent_stats = json.load(open(os.path.join(work, "send.json")))
        recv_stats = json.load(open(os.path.join(work, "recv.json")))
        probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                "stream=nb_read_frames", "-of", "csv=p=0", recording], capture_output=True, text=True)
        read_back = int(probe.stdout.strip() or 0)
    finally:
        for p in reversed(processes):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()

    end = samples[-1][0] if samples else 0
    early, late = (300, 600), (end - 300, end)
    result = {"seconds": args.seconds, "size": args.size, "flood_per_second": args.flood, "flood": counts,
              "framesEncoded": sent_stats["framesEncoded"], "framesDecoded": recv_stats["framesDecoded"],
              "framesRecorded": recv_stats["framesRecorded"], "framesReadBack": read_back,
              "recordingFaults": recv_stats.get("recordingFaults", 0),
              "receiverRefused": {k: recv_stats.get(k) for k in ("malformed", "authenticationFailures", "packetsWithoutSession",
                                                                 "packetsFromStrangers", "handshakeCookiesSent",
                                                                 "handshakesRateLimited", "handshakesRefused")},
              "sessions": recv_stats.get("sessions")}
    verdicts = []
    for name, (fi, ci) in {"sender": (1, 3), "receiver": (4, 6)}.items():
        peak_early, peak_late = window_peak(samples, fi, *early) / 1024, window_peak(samples, fi, *late) / 1024
        cpu_early, cpu_late = window_rate(samples, ci, *early), window_rate(samples, ci, *late)
        result[name] = {"footprintMiB": {"minutes5to10": round(peak_early, 2), "last5": round(peak_late, 2)},
                        "cpuPercent": {"minutes5to10": round(100 * cpu_early, 2), "last5": round(100 * cpu_late, 2)}}
        verdicts.append((f"{name} memory flat", abs(peak_late - peak_early) <= 1.0))
        verdicts.append((f"{name} CPU flat", abs(cpu_late - cpu_early) <= 0.2 * cpu_early))
    verdicts.append(("nothing lost from the recording", result["framesRecorded"] >= result["framesDecoded"] - 1
                     and read_back >= result["framesRecorded"] - 1 and result["recordingFaults"] == 0))
    result["verdicts"] = {name: ok for name, ok in verdicts}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "hostile-soak.json"), "w") as f:
        json.dump(result, f, indent=2, sort_keys=True)
    lines = [f"# Hostile soak: {args.seconds} s of {args.size}, share send to share recv --record on loopback",
             "", f"Flood, each a second: {args.flood} garbage datagrams, {args.flood} commits from 40 forged addresses, "
             f"{args.flood} reveals and proofs under made-up ids ({counts['garbage']} / {counts['commits']} / {counts['forged']} sent).",
             f"Command: `python3 Benchmarks/hostile_soak.py --seconds {args.seconds}` (release build).", "",
             "| process | peak footprint, minutes 5-10 | peak footprint, last 5 | CPU, minutes 5-10 | CPU, last 5 |",
             "|---|---|---|---|---|"]
    for name in ("sender", "receiver"):
        r = result[name]
        lines.append(f"| {name} | {r['footprintMiB']['minutes5to10']} MiB | {r['footprintMiB']['last5']} MiB | "
                     f"{r['cpuPercent']['minutes5to10']}% | {r['cpuPercent']['last5']}% |")
    lines += ["", f"Frames: {result['framesEncoded']} encoded, {result['framesDecoded']} decoded, {result['framesRecorded']} "
              f"recorded, {read_back} read back by ffprobe; {result['recordingFaults']} recording faults; "
              f"sessions {result['sessions']}.", f"Refused at the receiver: {result['receiverRefused']}.", ""]
    lines += [f"- {name}: {'yes' if ok else 'NO'}" for name, ok in verdicts]
    with open(os.path.join(args.out, "hostile-soak.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
