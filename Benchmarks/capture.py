#!/usr/bin/env python3
"""What capturing costs the sender: big screens and a moving pointer.

Runs the release `share-send` (static key, no audio, default 50 MiB budget)
against a UDP sink (the `-auto` cases: a `share recv` in a window), one case
after another in the same run, and samples /proc/<pid> ten times a second
after a warm-up: CPU (ms per frame sent and % of a core), peak footprint
(RssAnon + RssShmem, as the governor counts it) and RSS high-water mark,
frames sent and the size they were encoded at, and per named thread
(share-capture, share-encode, ...) its share of a core and its wake-ups a
second over the window.

Cases (each on its own virtual display):
  1080p-moving  a 1920x1080 screen, `share scene` moving content (the reference)
  4k-moving     a 3840x2160 screen, the same scene: captured in 1 MiB bands,
                scaled band by band, encoded at 1080p
  1080p-still   a still 1920x1080 screen
  1080p-typing  the same still screen, a character typed ten times a second
                into a line of text and a caret blinking twice a second: small
                changes (a few macroblocks each), each a picture
  1080p-pointer the same still screen, the pointer moving round a circle at
                60 Hz with `--cursor embed`: only the bands under the pointer
                are grabbed again, and x264 skips every other macroblock
  1080p-pointer-full  the same, with `--every-frame` (no change tracking):
                what a moving pointer costs when every picture is grabbed whole
                and encoded without telling x264 what did not change
  1080p-pointer-metadata  the same with `--cursor metadata`: the pointer is
                sent apart (RTCP APP), the still screen is not grabbed again
  1080p-pointer-auto  the same moving pointer, the default `--cursor auto`,
                sent to a `share recv` showing the picture in a window (on a
                virtual display of its own; a handshake with a key file): the
                receiver says it draws the pointer, so it goes apart
  1080p-still-auto  the still screen so sent, the pointer still
  1080p-paused  the sender, sending system audio too, paused (`share ctl
                pause`) a second after it started, while the scene's content
                and the pointer (XTest, as a mouse) move 20 times a second and
                the sine plays: what a paused sender costs
  720p-still    a still 1280x720 screen, no sound (the reference for the next)
  720p-still-system-audio  the same, sending system audio (`--audio system`):
                a PulseAudio daemon of its own with a null sink and a sine
                playing into it; the difference to 720p-still is what sound
                costs the sender
  wakeups-50hz  not the sender: a process of its own that does nothing but
                wake 50 times a second (Benchmarks/Reference/wakeup.c, built
                with cc), the floor under any thread woken every 20 ms, as
                the audio thread is for each Opus frame, on the machine at hand
  opus-50hz     not the sender either: the least any sender of 20 ms Opus
                packets does (Benchmarks/Reference/opus.c): wakes 50 times a
                second, encodes one frame of music-like stereo with the
                sender's Opus settings and sends it over loopback UDP; what
                sound costs the sender (720p-still-system-audio less
                720p-still) is read against it, in the same run

    make bench-capture
    python3 Benchmarks/capture.py --seconds 20 --cases 4k-moving,1080p-moving
    python3 Benchmarks/capture.py --name sound --cases 720p-still,720p-still-system-audio,wakeups-50hz,opus-50hz
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import DEFAULT_BIN, make_key, sample, start_xvfb, stop, write_results  # noqa: E402

CASES = {
    "1080p-moving": dict(size="1920x1080", scene=[], send=[]),
    "4k-moving": dict(size="3840x2160", scene=[], send=[]),
    "1080p-still": dict(size="1920x1080", scene=["--static"], send=[]),
    "1080p-typing": dict(size="1920x1080", scene=["--static", "--typing", "--fps", "10"], send=[]),
    "1080p-pointer": dict(size="1920x1080", scene=["--static", "--pointer", "--fps", "60"], send=["--cursor", "embed"]),
    "1080p-pointer-full": dict(size="1920x1080", scene=["--static", "--pointer", "--fps", "60"],
                               send=["--cursor", "embed", "--every-frame"]),
    "1080p-pointer-metadata": dict(size="1920x1080", scene=["--static", "--pointer", "--fps", "60"],
                                   send=["--cursor", "metadata"]),
    "1080p-pointer-auto": dict(size="1920x1080", scene=["--static", "--pointer", "--fps", "60"], send=[], viewer=True),
    "1080p-still-auto": dict(size="1920x1080", scene=["--static"], send=[], viewer=True),
    "1080p-paused": dict(size="1920x1080", scene=["--pointer", "--fps", "20"], send=["--audio", "system"], sound=True,
                         pause=True),
    "720p-still": dict(size="1280x720", scene=["--static"], send=[]),
    "720p-still-system-audio": dict(size="1280x720", scene=["--static"], send=["--audio", "system"], sound=True),
    "wakeups-50hz": dict(reference="wakeup.c", hz=50),
    "opus-50hz": dict(reference="opus.c", hz=50, libraries=["-lopus", "-lm"]),
}


def start_sound(work):
    """A PulseAudio daemon of its own (null sink `bench`, the default; a sine playing into it), and its environment."""
    directory = tempfile.mkdtemp(dir=work)
    socket_path = os.path.join(directory, "native")
    env = dict(os.environ, PULSE_SERVER=f"unix:{socket_path}", HOME=directory, XDG_RUNTIME_DIR=directory)
    daemon = subprocess.Popen(["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
                               "--load=module-null-sink sink_name=bench rate=48000",
                               f"--load=module-native-protocol-unix socket={socket_path} auth-anonymous=1"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(socket_path):
            break
        time.sleep(0.05)
    else:
        stop(daemon)
        raise SystemExit("capture: pulseaudio did not start")
    time.sleep(0.2)
    subprocess.run(["pactl", "load-module", "module-sine", "sink=bench", "frequency=440"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return daemon, env


def threads(pid):
    """Per named thread of a live process: CPU nanoseconds run (schedstat) and voluntary switches (wake-ups)."""
    out = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                ran = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{task}/status") as f:
                woke = next(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))
        except (FileNotFoundError, ProcessLookupError, StopIteration, ValueError):
            continue
        # The sender's threads are named (share-capture, share-encode, ...); others are summed as one.
        key = name if name.startswith("share-") else "other"
        old_ran, old_woke = out.get(key, (0, 0))
        out[key] = (old_ran + ran, old_woke + woke)
    return out


def thread_rates(before, after, seconds):
    """% of a core and wake-ups a second per thread between two `threads` readings."""
    return {name: {"cpuPercent": 100 * (ran - before.get(name, (0, 0))[0]) / 1e9 / seconds,
                   "wakeupsPerSecond": (woke - before.get(name, (0, 0))[1]) / seconds}
            for name, (ran, woke) in sorted(after.items())}


def run_case(name, case, args, key, work):
    display, xvfb = start_xvfb(case["size"])
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
    port = sink.getsockname()[1]
    keying = ["--srtp-key-file", key["file"]]
    viewer = receiver = None
    if case.get("viewer"):
        # A share recv in a window of its own display, in a handshake session.
        sink.close()
        viewer_display, viewer = start_xvfb(case["size"], taken=(display,))
        keying = ["--key-file", key["file"]]
        receiver = subprocess.Popen([os.path.join(args.bin, "share"), "recv", "--port", str(port), "--display", viewer_display,
                                     "--no-audio", "--duration", str(args.warmup + args.seconds + 5)] + keying,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    sound, env = start_sound(work) if case.get("sound") else (None, None)
    scene = subprocess.Popen([os.path.join(args.bin, "share-send"), "scene", "--display", display] + case["scene"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    stats = os.path.join(work, f"{name}.json")
    control = os.path.join(work, f"{name}.sock")
    sender = subprocess.Popen([os.path.join(args.bin, "share-send"), "send", "127.0.0.1", "--port", str(port),
                               "--display", display] + keying + [
                               "--duration", str(args.warmup + args.seconds + 1), "--stats-json", stats,
                               "--control", control]
                              + (["--audio", "none"] if "--audio" not in case["send"] else []) + case["send"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        if case.get("pause"):
            time.sleep(1)
            subprocess.run([os.path.join(args.bin, "share"), "ctl", "pause", "--socket", control], check=True,
                           stdout=subprocess.DEVNULL)
            time.sleep(max(0, args.warmup - 1))
        else:
            time.sleep(args.warmup)
        first = sample(sender.pid)
        first_threads = threads(sender.pid)
        began = time.monotonic()
        peak = hwm = 0
        last = first
        while time.monotonic() - began < args.seconds:
            time.sleep(0.1)
            now = sample(sender.pid)
            if now is None:
                break
            last = now
            peak = max(peak, now[1])
            hwm = max(hwm, now[3])
        elapsed = time.monotonic() - began
        # Read once at the end (not every 100 ms: the reading costs a core this machine shares).
        last_threads = threads(sender.pid) or first_threads
        output, _ = sender.communicate(timeout=30)
    finally:
        stop(sender)
        stop(scene)
        stop(xvfb)
        stop(sound)
        stop(receiver)
        stop(viewer)
        sink.close()
    if first is None or last is None:
        raise SystemExit(f"capture: {name}: the sender ended early")
    with open(stats) as f:
        s = json.load(f)
    cpu = last[0] - first[0]
    frames = s.get("framesEncoded", 0)
    # Frames sent in the measured window, from the rate the sender reports over its run.
    seconds = max(1e-9, s.get("elapsedSeconds") or (args.warmup + args.seconds + 1))
    measured_frames = frames * elapsed / seconds
    return {
        "case": name, "screen": case["size"], "encoded": f"{s.get('encodedWidth')}x{s.get('encodedHeight')}",
        "rung": s.get("memoryRung"), "fps": frames / seconds, "cpuPercent": 100 * cpu / elapsed,
        "cpuMsPerFrame": 1000 * cpu / measured_frames if measured_frames >= 1 else None,
        "peakFootprintMiB": max(peak, s.get("peakFootprintBytes", 0)) / 2**20, "peakRssMiB": hwm / 2**20,
        "framesEncoded": frames, "bandsGrabbed": s.get("bandsGrabbed"), "bandsKept": s.get("bandsKept"),
        "audioPackets": s.get("audioPacketsSent", 0), "pointerSentApart": s.get("pointerSentApart"),
        "threads": thread_rates(first_threads, last_threads, elapsed),
        "summary": output.strip().splitlines()[-12:],
    }


def run_reference(name, case, args, work):
    """A reference process of Benchmarks/Reference/ (built with cc), its CPU read as the sender's threads are."""
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Reference", case["reference"])
    binary = os.path.join(work, name)
    subprocess.run(["cc", "-O2", "-o", binary, source] + case.get("libraries", []), check=True)
    process = subprocess.Popen([binary, str(case["hz"])])
    try:
        time.sleep(args.warmup)
        first = threads(process.pid)
        began = time.monotonic()
        time.sleep(args.seconds)
        last = threads(process.pid)
        elapsed = time.monotonic() - began
    finally:
        stop(process)
    if not first or not last:
        raise SystemExit(f"capture: {name}: the reference ended early")
    rates = thread_rates(first, last, elapsed)
    return {"case": name, "screen": "–", "encoded": "–", "rung": None, "fps": None,
            "cpuPercent": sum(t["cpuPercent"] for t in rates.values()), "cpuMsPerFrame": None,
            "peakFootprintMiB": None, "peakRssMiB": None, "framesEncoded": 0, "bandsGrabbed": None,
            "bandsKept": None, "audioPackets": 0, "pointerSentApart": None, "threads": rates, "summary": []}


def fmt(value, digits=1):
    return "–" if value is None else f"{value:.{digits}f}"


def markdown(rows, args):
    rounds = max(sum(1 for r in rows if r["case"] == row["case"]) for row in rows)
    runs = "one run" if rounds == 1 else f"{rounds} rounds"
    lines = [f"# What capturing costs (`share send`, release build, {args.seconds:.0f} s measured per case, {runs})", "",
             "| case | screen | encoded | fps | CPU % of a core | CPU ms/frame | peak footprint MiB | peak RSS MiB | bands grabbed / kept |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        bands = f"{r['bandsGrabbed']} / {r['bandsKept']}" if r["bandsGrabbed"] is not None else "–"
        name = r["case"] + (" (pointer apart)" if r.get("pointerSentApart") else "")
        lines.append(f"| {name} | {r['screen']} | {r['encoded']} | {fmt(r['fps'])} | {fmt(r['cpuPercent'])} | "
                     f"{fmt(r['cpuMsPerFrame'], 2)} | {fmt(r['peakFootprintMiB'])} | {fmt(r['peakRssMiB'])} | {bands} |")
    lines += ["", "Per thread (% of a core / wake-ups a second, from /proc/<pid>/task/*/schedstat and voluntary switches):", "",
              "| case | " + " | ".join(THREADS) + " |", "|---|" + "---|" * len(THREADS)]
    for r in rows:
        cells = [f"{fmt(t['cpuPercent'], 2)} / {t['wakeupsPerSecond']:.0f}" if (t := r["threads"].get(n)) else "–"
                 for n in THREADS]
        lines.append(f"| {r['case']} | " + " | ".join(cells) + " |")
    lines += sound_against_floor(rows)
    return "\n".join(lines) + "\n"


def sound_against_floor(rows):
    """What sound costs the sender (the mean of the system-audio case less the mean of the silent one) against
    the two floors run beside it, when the run has all four cases."""
    def mean(name):
        values = [r["cpuPercent"] for r in rows if r["case"] == name]
        return sum(values) / len(values) if values else None
    silent, sound = mean("720p-still"), mean("720p-still-system-audio")
    wakeups, opus = mean("wakeups-50hz"), mean("opus-50hz")
    if None in (silent, sound, wakeups, opus) or opus <= 0:
        return []
    added = sound - silent
    return ["", f"Sound costs the sender {added:+.2f}% of a core (720p-still-system-audio less 720p-still); "
                f"the floor for 50 Opus packets a second on this machine is {opus:.2f}% (opus-50hz), of which the "
                f"wake-ups alone are {wakeups:.2f}% (wakeups-50hz): the sender's sound costs {added / opus:.2f}x the floor."]


# The sender's threads, in the order the table shows them.
THREADS = ["share-capture", "share-encode", "share-pacer", "share-network", "share-audio", "other"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, from: " + ", ".join(CASES))
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--bin", default=DEFAULT_BIN)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    parser.add_argument("--name", default="capture", help="the results' file name, without .md or .json")
    args = parser.parse_args()
    names = [n for n in args.cases.split(",") if n]
    for n in names:
        if n not in CASES:
            raise SystemExit(f"capture: no case {n} (there are {', '.join(CASES)})")
    with tempfile.TemporaryDirectory() as work:
        key = make_key(work)
        rows = []
        for name in names:
            print(f"capture: {name}", file=sys.stderr, flush=True)
            case = CASES[name]
            rows.append(run_reference(name, case, args, work) if "reference" in case
                        else run_case(name, case, args, key, work))
    write_results(args.out, args.name, rows, markdown(rows, args))


if __name__ == "__main__":
    main()
