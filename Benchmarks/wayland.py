#!/usr/bin/env python3
"""The Wayland path against X11 and GStreamer, side by side in one headless GNOME session.

A headless GNOME session (Mutter with one virtual monitor of the size measured,
PipeWire, WirePlumber, XWayland; Tests/Support/Wayland/gnome-session.sh) runs
as an unprivileged user, as the tests run it. `share scene --stamp` draws on
XWayland, and three senders capture the same session in turn, each to the
common receiver (`share recv --read-stamps`, which reads the stamp from every
decoded picture: glass-to-glass latency):

- share-wayland: `share send --capture gnome` (GNOME's screen cast through PipeWire);
- share-x11: `share send --capture x11` on an Xvfb display of the same size
  where a second `share scene --stamp` draws (our X11 path, measured while
  the GNOME session draws its scene too, so the machine is as loaded);
- gstreamer: `pipewiresrc ! videoconvert ! x264enc ! rtph264pay ! srtpenc`
  on a screen cast of the same monitor, held open by remote_input.py.

Every sender encodes with x264 (ultrafast, zerolatency) at the same bitrate,
rate and keyframe interval, and protects with SRTP. The sender's /proc is
sampled as harness.py samples it. A typing run (`share scene --static --typing`)
measures both share senders where little changes, as on most desktops (GNOME 43
sends no damage: share finds what changed itself). A still-screen run (`share
scene --static`) gives share-wayland's idle cost. Mutter renders in software
here (no GPU), and its own CPU is reported beside, since it bounds the rate a
compositor can give. `--fps` below the compositor's rate (20 at 1080p here)
compares both share paths at one rate, so each picture carries as much motion.

    python3 Benchmarks/wayland.py                       # 720p and 1080p
    python3 Benchmarks/wayland.py --sizes 1280x720 --seconds 10 --repeats 1
"""
import argparse
import json
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (the shared /proc sampling, keys and SDP)

ROOT = harness.ROOT
USER = "share-wayland"
SESSION_SCRIPT = os.path.join(ROOT, "Tests", "Support", "Wayland", "gnome-session.sh")
REMOTE_INPUT = os.path.join(ROOT, "Tests", "Support", "Wayland", "remote_input.py")
SENDERS = ("share-wayland", "share-x11", "gstreamer")


def ensure_user():
    """The unprivileged user the session runs as, made once."""
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", USER], check=True)


class Session:
    """A headless GNOME session as USER, stopped by its script's PID."""

    def __init__(self, size, work):
        ensure_user()
        entry = pwd.getpwnam(USER)
        self.ids = (entry.pw_uid, entry.pw_gid)
        self.runtime = f"/tmp/share-wayland-bench-{uuid.uuid4().hex[:8]}"
        os.mkdir(self.runtime, 0o700)
        os.chown(self.runtime, *self.ids)
        self.log = os.path.join(work, "session.log")
        base = {"HOME": entry.pw_dir, "USER": USER, "XDG_RUNTIME_DIR": self.runtime, "PATH": os.environ["PATH"]}
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(self.as_user(["dbus-run-session", "--", SESSION_SCRIPT, self.runtime, size]),
                                            env=base, stdout=log, stderr=subprocess.STDOUT)
        values = {}
        for _ in range(600):
            try:
                with open(os.path.join(self.runtime, "session.env")) as f:
                    values = dict(line.strip().split("=", 1) for line in f if "=" in line)
                break
            except OSError:
                time.sleep(0.05)
        text = open(self.log).read()
        marker = "Using public X11 display "
        if not values or marker not in text:
            raise SystemExit(f"wayland: the GNOME session did not start: {text[-2000:]}")
        self.script_pid = int(values["SESSION_PID"])
        self.display = text.split(marker, 1)[1].split(",", 1)[0].strip()
        self.env = dict(base, DBUS_SESSION_BUS_ADDRESS=values["DBUS_SESSION_BUS_ADDRESS"], WAYLAND_DISPLAY="wayland-0",
                        DISPLAY=self.display, XAUTHORITY=values.get("XAUTHORITY", ""),
                        XDG_STATE_HOME=os.path.join(self.runtime, "state"))
        subprocess.run(self.as_user(["env", *[f"{k}={v}" for k, v in self.env.items()], "xhost", "+si:localuser:root"]),
                       capture_output=True)

    def as_user(self, command):
        return ["setpriv", f"--reuid={self.ids[0]}", f"--regid={self.ids[1]}", "--init-groups", "--", *command]

    def start(self, command, **kwargs):
        return subprocess.Popen(self.as_user(["env", *[f"{k}={v}" for k, v in self.env.items()], *command]), **kwargs)

    def mutter_pid(self):
        found = subprocess.run(["pgrep", "-u", USER, "-x", "mutter"], capture_output=True, text=True).stdout.split()
        return int(found[-1]) if found else None

    def close(self):
        try:
            os.kill(self.script_pid, 15)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.runtime, ignore_errors=True)


def sender_command(kind, session, run, key, port, node):
    size, fps, kbps, keyint = run["size"], run["fps"], run["bitrate"], run["keyint"]
    if kind.startswith("share"):
        capture = ["--capture", "gnome"] if kind == "share-wayland" else ["--capture", "x11", "--display", run["xvfb"]]
        return [os.path.join(harness.BIN, "share-send"), "send", "127.0.0.1", "--port", str(port), *capture,
                "--fps", str(fps), "--bitrate", str(kbps), "--keyint", str(keyint), "--srtp-key-file", key["file"],
                "--audio", "none", "--cursor", "none", "--stats-json", run["sender_stats"]]
    return ["gst-launch-1.0", "-q", "pipewiresrc", f"path={node}", "do-timestamp=true", "!",
            f"videorate", "!", f"video/x-raw,framerate={fps}/1", "!", "videoconvert", "!", "video/x-raw,format=I420", "!",
            "x264enc", "speed-preset=ultrafast", "tune=zerolatency", f"bitrate={kbps}", f"key-int-max={keyint}", "!",
            "video/x-h264,profile=constrained-baseline", "!", "rtph264pay", "config-interval=-1", "pt=96", "mtu=1200", "!",
            "srtpenc", f"key={key['hex']}", "rtp-cipher=aes-128-icm", "rtp-auth=hmac-sha1-80", "rtcp-cipher=aes-128-icm",
            "rtcp-auth=hmac-sha1-80", "!", "udpsink", "host=127.0.0.1", f"port={port}", "sync=false", "async=false"]


def run_one(kind, session, run, key, work, node):
    port = harness.free_port()
    run["sender_stats"] = os.path.join(work, f"send-{kind}.json")
    stats = os.path.join(work, f"recv-{kind}.json")
    for stale in (run["sender_stats"], stats):
        if os.path.exists(stale):
            os.remove(stale)
    sdp = os.path.join(work, "recv.sdp")
    harness.write_secret(sdp, harness.receiver_sdp(port, key, False))
    seconds = run["seconds"]
    receiver = subprocess.Popen([os.path.join(harness.BIN, "share-recv"), "recv", "--sdp", sdp, "--read-stamps", "--no-audio",
                                 "--no-window", "--duration", str(harness.WARMUP + seconds + 30), "--stats-json", stats],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    err = open(os.path.join(work, f"send-{kind}.err"), "w")
    sender = session.start(sender_command(kind, session, run, key, port, node), stdout=subprocess.DEVNULL, stderr=err)
    mutter = session.mutter_pid()
    started = time.monotonic()
    time.sleep(harness.WARMUP)
    first, mutter_first = harness.sample(sender.pid), harness.sample(mutter) if mutter else None
    last, mutter_last, peak_footprint = first, mutter_first, 0
    end = time.time() + seconds
    while time.time() < end:
        time.sleep(0.1)
        s = harness.sample(sender.pid)
        if s is None:
            break
        last, peak_footprint = s, max(peak_footprint, s[1])
        mutter_last = harness.sample(mutter) if mutter else None
    harness.stop(sender)
    lifetime = time.monotonic() - started
    err.close()
    time.sleep(harness.TAIL)
    harness.stop(receiver, timeout=20)
    with open(stats) as f:
        received = json.load(f)
    if first is None or last is None:
        raise SystemExit(f"wayland: {kind} did not run: {open(err.name).read()[-2000:]}")
    cpu = last[0] - first[0]
    frames = received["framesDecoded"] / max(lifetime, 1) * seconds
    g2g = received.get("glassToGlass", {})
    sent = {}
    if kind.startswith("share") and os.path.exists(run["sender_stats"]):
        with open(run["sender_stats"]) as f:
            sent = json.load(f)
    return {"sender": kind, "cpu_ms_per_frame": cpu * 1000 / max(frames, 1), "core_percent": cpu / seconds * 100,
            "fps_decoded": received["framesDecoded"] / max(lifetime, 1), "peak_footprint_mib": peak_footprint / 1048576,
            "g2g_p50": g2g.get("p50"), "g2g_p95": g2g.get("p95"), "g2g_samples": g2g.get("samples", 0),
            # From the picture's capture (its arrival from PipeWire) to its display: share's own part.
            "capture_to_display_p50": received.get("captureToDisplay", {}).get("p50") if kind.startswith("share") else None,
            "frames_delivered": sent.get("framesDelivered"),
            "encode_ms_p50": sent.get("encodeMilliseconds", {}).get("p50"),
            "mutter_core_percent": (mutter_last[0] - mutter_first[0]) / seconds * 100 if mutter_first and mutter_last else None}


def run_senders(senders, label, session, run, key, work, node, repeats):
    """Each sender `repeats` times, in turn, the order reversed every other round."""
    rows = []
    for repeat in range(repeats):
        for kind in (senders if repeat % 2 == 0 else list(reversed(senders))):
            print(f"wayland: {run['size']} {kind}{label} (run {repeat + 1})", flush=True)
            row = run_one(kind, session, run, key, work, node)
            row["sender"] = kind + label
            rows.append(row)
    return rows


def median(rows, key):
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


def measure(size, args, key, work):
    session = Session(size, work)
    os.chmod(work, 0o777)
    rows = []
    try:
        helper = session.start(["/usr/bin/python3", REMOTE_INPUT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert helper.stdout.readline().strip() == "ready"
        helper.stdin.write("cast\n")
        helper.stdin.flush()
        node = int(helper.stdout.readline().split()[1])
        scene = subprocess.Popen([os.path.join(harness.BIN, "share"), "scene", "--display", session.display, "--stamp"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        xvfb, xvfb_process = harness.start_xvfb(size)
        x11_scene = subprocess.Popen([os.path.join(harness.BIN, "share"), "scene", "--display", xvfb, "--stamp"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        w, h = (int(v) for v in size.split("x"))
        run = {"xvfb": xvfb, "size": size, "fps": args.fps, "bitrate": args.bitrate or int(w * h * args.fps * 0.1 / 1000),
               "keyint": 150, "seconds": args.seconds}
        senders = args.senders.split(",")
        if not args.no_moving:
            rows += run_senders(senders, "", session, run, key, work, node, args.repeats)
        harness.stop(scene)
        harness.stop(x11_scene)
        if not args.no_typing:
            # A desktop where little changes: typing into a line, a caret blinking.
            typing = [subprocess.Popen([os.path.join(harness.BIN, "share"), "scene", "--display", display, "--static",
                                        "--typing", "--fps", str(args.fps)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                      for display in (session.display, xvfb)]
            time.sleep(1.5)
            rows += run_senders([k for k in senders if k.startswith("share")], " typing", session, run, key, work, node,
                                args.repeats)
            for process in typing:
                harness.stop(process)
        harness.stop(xvfb_process)
        if not args.no_still:
            scene = subprocess.Popen([os.path.join(harness.BIN, "share"), "scene", "--display", session.display, "--static"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)
            print(f"wayland: {size} still share-wayland", flush=True)
            still = run_one("share-wayland", session, dict(run, seconds=args.seconds), key, work, node)
            still["sender"] = "share-wayland still"
            rows.append(still)
            harness.stop(scene)
        helper.stdin.close()
        helper.wait(timeout=10)
    finally:
        session.close()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1280x720,1920x1080")
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--bitrate", type=int, help="kbit/s (default: w x h x fps x 0.1)")
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--senders", default=",".join(SENDERS))
    parser.add_argument("--no-moving", action="store_true", help="skip the moving-scene runs")
    parser.add_argument("--no-still", action="store_true")
    parser.add_argument("--no-typing", action="store_true", help="skip the small-change runs (`share scene --static --typing`)")
    parser.add_argument("--out", default=os.path.join(ROOT, "Benchmarks", "results"))
    parser.add_argument("--bin", default=harness.DEFAULT_BIN)
    args = parser.parse_args()
    harness.BIN = args.bin
    results = {}
    with tempfile.TemporaryDirectory(prefix="share-wayland-bench-") as work:
        ensure_user()
        key = harness.make_key(work)
        os.chown(key["file"], pwd.getpwnam(USER).pw_uid, -1)  # the sender reads it as the session's user
        for size in args.sizes.split(","):
            results[size] = measure(size, args, key, work)
    lines = ["# The Wayland path: share through PipeWire, beside share on X11 and GStreamer", "",
             f"{args.seconds:g} s a run, {args.repeats} runs a sender, medians; {args.fps} fps; one headless GNOME session "
             "(Mutter 43, software rendering) a size; `share scene --stamp` on XWayland. "
             f"Command: `{' '.join(['python3', 'Benchmarks/wayland.py', *sys.argv[1:]])}`.", "",
             "| size | sender | CPU ms/frame | x share-x11 | core % | fps decoded | g2g p50 ms | g2g p95 ms | capture to display p50 ms | encode p50 ms | footprint MiB | Mutter core % |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for size, rows in results.items():
        kinds = list(dict.fromkeys(r["sender"] for r in rows))
        for kind in kinds:
            mine = [r for r in rows if r["sender"] == kind]
            cpu = median(mine, "cpu_ms_per_frame")
            # Against share-x11 on the same scene.
            reference = f"share-x11 {kind.partition(' ')[2]}".strip()
            x11 = median([r for r in rows if r["sender"] == reference], "cpu_ms_per_frame")
            ratio = f"{cpu / x11:.2f}" if cpu and x11 and "still" not in kind else "-"
            lines.append(f"| {size} | {kind} | {fmt(cpu, 2)} | {ratio} | {fmt(median(mine, 'core_percent'), 2)} | "
                         f"{fmt(median(mine, 'fps_decoded'))} | {fmt(median(mine, 'g2g_p50'))} | {fmt(median(mine, 'g2g_p95'))} | "
                         f"{fmt(median(mine, 'capture_to_display_p50'))} | {fmt(median(mine, 'encode_ms_p50'), 2)} | "
                         f"{fmt(median(mine, 'peak_footprint_mib'))} | {fmt(median(mine, 'mutter_core_percent'))} |")
    lines += ["", "Glass-to-glass runs from the stamp drawn on XWayland to the picture decoded. For share-wayland, "
              "'capture to display' is the part after PipeWire delivered the picture (capture, encode, send, decode); "
              "the rest is the compositor's: XWayland, Mutter's software composition and its copy into the PipeWire "
              "buffer. share-x11's glass-to-glass is on Xvfb, with no compositor. 'typing' rows draw `share scene "
              "--static --typing` instead (no stamp) and are compared with share-x11 on that scene; 'encode p50' is the "
              "sender's wall time in x264 a picture.", ""]
    harness.write_results(args.out, "wayland", {"settings": vars(args), "rows": results}, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
