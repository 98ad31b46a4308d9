#!/usr/bin/env python3
"""The benchmark harness: share, ffmpeg and GStreamer doing the same job, side by side.

Each sender captures the same virtual X display, where `share scene --stamp`
draws moving content and, 233 times a second, a frame stamp (the drawing
time as a row of black/white blocks). Each encodes H.264 with x264
(ultrafast, zerolatency, same bitrate, fps and keyframe interval),
packetizes to RTP and protects with SRTP (AES_CM_128_HMAC_SHA1_80), to one
common receiver (`share recv --read-stamps`, a window on a second virtual
display), one sender after another in the same run, so only the sender
varies. The receiver reads the stamp from every decoded picture as it shows
it: glass-to-glass latency. /proc/<pid> of the sender is sampled ten times a
second: CPU time, footprint (RssAnon + RssShmem, as iOS counts it), RSS and
its high-water mark.

Runs: moving content at every size, then a static screen (idle), then
moving content with system audio (a tone playing into a private PulseAudio
server; every sender also sends it as Opus), then at every size the scene
and its stamp redrawn together 59 and 20 times a second (faster and slower
than the capture rate: the wait for a change to be grabbed counts; rows
"@ 59 Hz", "@ 20 Hz"). Each run is repeated; the
report gives medians and ratios against share, as a Markdown table, JSON and
an SVG plot.

    make harness                      # the full run (about 17 minutes)
    python3 Benchmarks/harness.py --quick
    python3 Benchmarks/harness.py --sizes 1920x1080 --seconds 30 --repeats 3 --senders share,ffmpeg

With --network PROFILE[,PROFILE...] (or `all`) it measures `share` instead
across simulated networks: the sender reaches the receiver through
`share relay` (loss, bursts, delay, jitter, a bottleneck with a drop-tail
queue), and the report gives, per profile, frames shown and time frozen
after the first 3 s, glass-to-glass latency, retransmission overhead,
keyframes, and the sender's rate over time (network.md, .json, .svg).

    python3 Benchmarks/harness.py --network all
    python3 Benchmarks/harness.py --network cap1m,rtt100 --seconds 30
"""
import argparse
import base64
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BIN = BIN = os.path.join(ROOT, ".build", "release")
TICK = os.sysconf("SC_CLK_TCK")
ALL_SENDERS = ("share", "ffmpeg", "gstreamer")
WARMUP = 1.5  # seconds a sender runs before measuring starts
TAIL = 0.3    # seconds the receiver runs on after the sender stopped (packets in flight)


# MARK: processes and /proc

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1] & ~1


def free_display(taken=()):
    # Far from the numbers the test suite picks (90-300), which may run beside us.
    n = 500 + os.getpid() % 100
    while (os.path.exists(f"/tmp/.X11-unix/X{n}") or os.path.exists(f"/tmp/.X{n}-lock")) or f":{n}" in taken:
        n += 1
    return f":{n}"


def start_xvfb(size, taken=()):
    display = free_display(taken)
    process = subprocess.Popen(["Xvfb", display, "-screen", "0", f"{size}x24", "-nolisten", "tcp", "-noreset"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            # Ours only if the lock file names our server (not one started a moment earlier).
            with open(f"/tmp/.X{display[1:]}-lock") as f:
                owner = int(f.read().strip() or 0)
        except (OSError, ValueError):
            owner = 0
        if owner == process.pid and os.path.exists(f"/tmp/.X11-unix/X{display[1:]}"):
            return display, process
        if process.poll() is not None:
            return start_xvfb(size, taken + (display,))
        time.sleep(0.05)
    raise SystemExit(f"harness: Xvfb {display} did not start")


def stop(process, timeout=10):
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def sample(pid):
    """CPU seconds, footprint, RSS and RSS high-water mark (bytes) of a live process, else None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        kb = {}
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("RssAnon", "RssShmem", "VmRSS", "VmHWM"):
                    kb[key] = int(value.split()[0])
        return cpu, (kb.get("RssAnon", 0) + kb.get("RssShmem", 0)) * 1024, kb.get("VmRSS", 0) * 1024, \
            kb.get("VmHWM", 0) * 1024
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


# MARK: the three senders

def family(kind):
    """The program a sender runs: `share[--threads 2]` is share with those options after its own."""
    return kind.split("[", 1)[0]


def variant_options(kind):
    """The options a `share[...]` variant adds to `share send` (none for plain share)."""
    return kind[len(family(kind)) + 1:-1].split() if "[" in kind else []


def sender_command(kind, run, key, port, pulse):
    size, fps, kbps, keyint, display = run["size"], run["fps"], run["bitrate"], run["keyint"], run["display"]
    audio = run["audio"]
    if family(kind) == "share":
        return [os.path.join(BIN, "share-send"), "send", "127.0.0.1", "--port", str(port), "--display", display,
                "--fps", str(fps), "--bitrate", str(kbps), "--keyint", str(keyint), "--srtp-key-file", key["file"],
                "--audio", "system" if audio else "none", "--stats-json", run["sender_stats"],
                *variant_options(kind)]
    if kind == "ffmpeg":
        srtp = ["-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", key["inline"]]
        command = ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-progress", run["sender_stats"],
                   "-f", "x11grab", "-framerate", str(fps), "-video_size", size, "-draw_mouse", "0", "-i", display]
        if audio:
            # ffmpeg's transcode loop then holds the video back about 0.66 s
            # behind the audio input's timestamps (20 ms fragments made it
            # worse, 1.4 s); left as ffmpeg does it.
            command += ["-f", "pulse", "-i", "default"]
        command += ["-map", "0:v", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
                    "-profile:v", "baseline", "-pix_fmt", "yuv420p", "-b:v", f"{kbps}k", "-maxrate", f"{kbps}k",
                    "-bufsize", f"{kbps // 2}k", "-g", str(keyint), "-f", "rtp", *srtp,
                    f"srtp://127.0.0.1:{port}?pkt_size=1200"]
        if audio:
            command += ["-map", "1:a", "-c:a", "libopus", "-ac", "2", "-b:a", "96k", "-application", "audio",
                        "-frame_duration", "20", "-f", "rtp", "-payload_type", "111", *srtp,
                        f"srtp://127.0.0.1:{port}?pkt_size=1200"]
        return command
    if kind == "gstreamer":
        def srtpenc(name):
            return ["srtpenc", f"name={name}", f"key={key['hex']}", "rtp-cipher=aes-128-icm", "rtp-auth=hmac-sha1-80",
                    "rtcp-cipher=aes-128-icm", "rtcp-auth=hmac-sha1-80"]
        command = ["gst-launch-1.0", "-q", "ximagesrc", f"display-name={display}", "use-damage=false",
                   "show-pointer=false", "!", f"video/x-raw,framerate={fps}/1", "!", "videoconvert", "!",
                   "video/x-raw,format=I420", "!", "x264enc", "speed-preset=ultrafast", "tune=zerolatency",
                   f"bitrate={kbps}", f"key-int-max={keyint}", "!", "video/x-h264,profile=constrained-baseline", "!",
                   "rtph264pay", "config-interval=-1", "pt=96", "mtu=1200", "!", *srtpenc("videosrtp"), "!",
                   "udpsink", "host=127.0.0.1", f"port={port}", "sync=false", "async=false"]
        if audio:
            command += ["pulsesrc", "!", "audio/x-raw,rate=48000,channels=2", "!", "audioconvert", "!", "opusenc",
                        "bitrate=96000", "frame-size=20", "!", "rtpopuspay", "pt=111", "!", *srtpenc("audiosrtp"),
                        "!", "udpsink", "host=127.0.0.1", f"port={port}", "sync=false", "async=false"]
        return command
    raise ValueError(kind)


def write_results(out, name, data, text):
    """Writes a side benchmark's `name`.json (its rows) and `name`.md (its table) into `out`, and prints the table."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(data, f, indent=2)
    with open(os.path.join(out, f"{name}.md"), "w") as f:
        f.write(text)
    print(text)


def write_secret(path, text):
    """Writes a file that holds a key with mode 0600 (share recv refuses one others can read)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def receiver_sdp(port, key, audio):
    text = (f"v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=harness\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
            f"m=video {port} RTP/SAVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n"
            f"a=extmap:1 http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time\r\n"
            f"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:{key['inline']}\r\n")
    if audio:
        text += (f"m=audio {port} RTP/SAVP 111\r\na=rtpmap:111 opus/48000/2\r\n"
                 f"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:{key['inline']}\r\n")
    return text


def frames_sent(kind, path, received):
    """Frames the sender says it sent; GStreamer says nothing, so the frames seen on the wire."""
    try:
        if family(kind) == "share":
            with open(path) as f:
                return json.load(f)["framesEncoded"]
        if kind == "ffmpeg":
            frames = [int(line.split("=")[1]) for line in open(path) if line.startswith("frame=")]
            return frames[-1] if frames else 0
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        pass
    return received["framesAssembled"] + received["framesLost"]


def run_one(kind, run, key, work, pulse, progress):
    port = free_port()
    run["sender_stats"] = os.path.join(work, f"send-{kind}.out")
    stats = os.path.join(work, f"recv-{kind}.json")
    for stale in (run["sender_stats"], stats):  # never read a previous run's figures
        if os.path.exists(stale):
            os.remove(stale)
    sdp = os.path.join(work, "recv.sdp")
    write_secret(sdp, receiver_sdp(port, key, run["audio"]))
    seconds = run["seconds"]
    # The receiver is stopped (SIGINT: it writes its statistics) right after
    # the sender; its duration is only a backstop.
    receive = [os.path.join(BIN, "share-recv"), "recv", "--sdp", sdp, "--read-stamps", "--no-audio",
               "--duration", str(WARMUP + seconds + 30), "--stats-json", stats]
    receive += ["--display", run["receiver_display"]] if run["receiver_display"] else ["--no-window"]
    receiver = subprocess.Popen(receive, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    err = open(os.path.join(work, f"send-{kind}.err"), "w")
    sender = subprocess.Popen(sender_command(kind, run, key, port, pulse), stdout=subprocess.DEVNULL, stderr=err)
    started = time.monotonic()
    time.sleep(WARMUP)
    first = sample(sender.pid)
    last, peak_footprint, peak_rss = first, 0, 0
    end = time.time() + seconds
    while time.time() < end:
        time.sleep(0.1)
        progress.tick()
        s = sample(sender.pid)
        if s is None:
            break
        last = s
        peak_footprint, peak_rss = max(peak_footprint, s[1]), max(peak_rss, s[3])
    stop(sender)
    lifetime = time.monotonic() - started
    err.close()
    time.sleep(TAIL)
    stop(receiver, timeout=20)
    try:
        with open(stats) as f:
            received = json.load(f)
    except (OSError, json.JSONDecodeError):
        raise SystemExit(f"harness: the receiver wrote no statistics for {kind}; see {work}")
    if first is None or last is None:
        with open(os.path.join(work, f"send-{kind}.err")) as f:
            raise SystemExit(f"harness: {kind} did not run: {f.read()[-2000:]}")
    cpu = last[0] - first[0]
    # Frames in the measured window, at the rate the receiver decoded them
    # over the sender's life.
    frames_in_window = received["framesDecoded"] / max(lifetime, 1) * seconds
    g2g = received.get("glassToGlass", {})
    return {
        "sender": kind, "cpu_ms_per_frame": cpu * 1000 / max(frames_in_window, 1),
        "core_percent": cpu / seconds * 100, "peak_footprint_mib": peak_footprint / 1048576,
        "peak_rss_mib": peak_rss / 1048576,
        "frames_sent": frames_sent(kind, run["sender_stats"], received), "frames_decoded": received["framesDecoded"],
        "decode_errors": received["decodeErrors"], "frames_lost": received["framesLost"],
        "audio_packets": received["audio"]["packetsReceived"],
        "g2g_p50": g2g.get("p50"), "g2g_p95": g2g.get("p95"), "g2g_p99": g2g.get("p99"), "g2g_max": g2g.get("max"),
        "g2g_samples": g2g.get("samples", 0), "stamps_unreadable": received.get("stampsUnreadable", 0),
        # Where share's glass-to-glass goes: capture to the last packet sent
        # (and the encode within it), capture to the picture shown.
        "capture_to_display_p50": received.get("captureToDisplay", {}).get("p50"),
        **(share_stages(run["sender_stats"]) if family(kind) == "share" else {}),
    }


def share_stages(path):
    """The sender's own latency figures (medians, ms) from its statistics."""
    try:
        with open(path) as f:
            sent = json.load(f)
    except (OSError, json.JSONDecodeError):
        return {}
    return {"capture_to_send_p50": sent.get("captureToSend", {}).get("p50"),
            "encode_p50": sent.get("encodeMilliseconds", {}).get("p50"),
            "first_packet_lead_p50": sent.get("firstPacketLead", {}).get("p50")}


# MARK: progress

class Progress:
    """One status line on a terminal (a line per run otherwise), with time left."""

    def __init__(self, total_seconds, runs):
        self.total, self.runs, self.started, self.done_seconds = total_seconds, runs, time.time(), 0.0
        self.index, self.label, self.run_started = 0, "", time.time()
        self.tty = sys.stderr.isatty()

    def begin(self, label, planned):
        self.index += 1
        self.label, self.planned, self.run_started = label, planned, time.time()
        if not self.tty:
            print(f"[{self.index}/{self.runs}] {label}", file=sys.stderr, flush=True)
        self.tick()

    def end(self):
        self.done_seconds += self.planned
        self.tick()

    def tick(self):
        if not self.tty:
            return
        current = min(time.time() - self.run_started, self.planned)
        fraction = min((self.done_seconds + current) / max(self.total, 1), 1)
        elapsed = time.time() - self.started
        left = max(self.total - self.done_seconds - current, 0)
        bar = "#" * int(fraction * 24)
        sys.stderr.write(f"\r\033[K[{self.index}/{self.runs}] {self.label:<40} [{bar:<24}] {fraction * 100:3.0f}%  "
                         f"{elapsed // 60:.0f}:{elapsed % 60:02.0f} elapsed, ~{left // 60:.0f}:{left % 60:02.0f} left")
        sys.stderr.flush()

    def finish(self):
        if self.tty:
            sys.stderr.write("\n")


# MARK: report

METRICS = ("cpu_ms_per_frame", "core_percent", "peak_footprint_mib", "peak_rss_mib", "frames_sent", "frames_decoded",
           "g2g_p50", "g2g_p95", "g2g_p99", "g2g_max", "audio_packets", "capture_to_display_p50",
           "capture_to_send_p50", "encode_p50", "first_packet_lead_p50")


def medians(results):
    table = {}
    for r in results:
        table.setdefault(r["run"], {}).setdefault(r["sender"], []).append(r)
    out = {}
    for run, senders in table.items():
        out[run] = {}
        for kind, rows in senders.items():
            m = {}
            for key in METRICS:
                values = [row[key] for row in rows if row.get(key) is not None]
                m[key] = statistics.median(values) if values else None
            m["repeats"] = len(rows)
            out[run][kind] = m
    return out


def fmt(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(settings, med):
    scene = (f"scene and stamp redrawn {settings['scene_rate']} times a second" if settings.get("scene_rate")
             else "stamp redrawn 233 times a second (runs marked @ N Hz: scene and stamp redrawn together N times a "
                  "second)")
    lines = [f"Sender benchmark: {settings['when']}, {settings['host']}; fps {settings['fps']}, {scene}, keyframe every "
             f"{settings['keyint']} frames, AES_CM_128_HMAC_SHA1_80, bitrate w x h x fps x 0.1 bit/s; "
             f"{settings['seconds']:.0f} s measured per run after {WARMUP:.1f} s warm-up, medians of "
             f"{settings['repeats']} repeats. Command: `{settings['command']}`.", ""]
    lines += ["| run | sender | CPU ms/frame | % of a core | CPU vs share | glass-to-glass p50 / p95 / p99 / max ms | "
              "peak footprint MiB | peak RSS MiB | frames sent / decoded |",
              "|---|---|---|---|---|---|---|---|---|"]
    for run, senders in med.items():
        base = senders.get("share", {}).get("cpu_ms_per_frame")
        for kind, m in senders.items():
            ratio = f"{m['cpu_ms_per_frame'] / base:.2f}x" if base and m["cpu_ms_per_frame"] else "-"
            g2g = " / ".join(fmt(m[k]) for k in ("g2g_p50", "g2g_p95", "g2g_p99", "g2g_max"))
            if run.endswith("static"):
                g2g = "(still screen)"
            lines.append(f"| {run} | {kind} | {fmt(m['cpu_ms_per_frame'], 2)} | {fmt(m['core_percent'])} | {ratio} | "
                         f"{g2g} | {fmt(m['peak_footprint_mib'])} | {fmt(m['peak_rss_mib'])} | "
                         f"{fmt(m['frames_sent'], 0)} / {fmt(m['frames_decoded'], 0)} |")
    lines += ["", "CPU is the sender process's user + system time over the measured window; footprint is "
              "RssAnon + RssShmem sampled every 100 ms; peak RSS is the kernel's high-water mark (VmHWM). "
              "Glass-to-glass runs from the scene drawing a frame stamp to the receiver showing the picture that "
              "holds it (first appearance of each stamp). Frames sent: share's and ffmpeg's own counts; "
              "GStreamer's are the frames seen on the wire."]
    stages = [(f"{run} ({kind})" if kind != "share" else run, m) for run, by in med.items() for kind, m in by.items()
              if family(kind) == "share" and m.get("capture_to_send_p50") and "static" not in run]
    if stages:
        lines += ["", "Where share's glass-to-glass goes (medians, ms): the stamp's age when grabbed is glass-to-glass "
                  "less capture-to-display; capture to the last packet sent includes the encode, and the first "
                  "packet leaves that long before the encode ends.", "",
                  "| run | glass-to-glass | capture to display | capture to last packet sent | encode | first packet ahead |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {run} | {fmt(m['g2g_p50'])} | {fmt(m['capture_to_display_p50'])} | {fmt(m['capture_to_send_p50'])} | "
                  f"{fmt(m['encode_p50'], 2)} | {fmt(m['first_packet_lead_p50'], 2)} |" for run, m in stages]
    return "\n".join(lines) + "\n"


COLOURS = {"share": "#2a7de1", "ffmpeg": "#e0782a", "gstreamer": "#3aa35a"}


def svg(settings, med):
    """Two panels per moving-content run: latency percentiles and CPU per frame, one row per sender."""
    runs = [r for r in med if not r.endswith("static")]
    row_h, panel_w, left, gap = 22, 330, 150, 40
    senders_per_run = [len(med[r]) for r in runs]
    height = 70 + sum(n * row_h + 40 for n in senders_per_run) + 56
    width = left + 2 * panel_w + gap + 40
    # The axis fits the rows within 10x of the fastest p50 in the plot; a row
    # beyond that (ffmpeg holding video back for audio) is marked off scale.
    fastest = min([m["g2g_p50"] for r in runs for m in med[r].values() if m["g2g_p50"]] + [1000])
    on_scale = [m["g2g_p99"] or 0 for r in runs for m in med[r].values() if (m["g2g_p50"] or 0) <= 10 * fastest]
    max_latency = max(on_scale + [1])
    max_cpu = max([m["cpu_ms_per_frame"] or 0 for r in runs for m in med[r].values()] + [0.1])
    # Room right of the p99 whisker for its label.
    lat_scale, cpu_scale = (panel_w - 130) / (max_latency * 1.05), (panel_w - 60) / (max_cpu * 1.1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           f'font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">Glass-to-glass latency (ms)</text>',
           f'<text x="{left + panel_w + gap}" y="20" font-size="14" font-weight="bold">Sender CPU per frame (ms)</text>',
           f'<text x="{left}" y="38" fill="#555">bar: p50 to p95; whisker: p99; tick: p50</text>']
    y = 60
    for run in runs:
        out.append(f'<text x="10" y="{y + 12}" font-weight="bold">{run}</text>')
        y += 18
        for kind, m in med[run].items():
            colour = COLOURS.get(kind, "#888")
            out.append(f'<text x="20" y="{y + 14}">{kind}</text>')
            p50, p95, p99 = m["g2g_p50"], m["g2g_p95"], m["g2g_p99"]
            if p50 is not None and p50 > 10 * fastest:
                out.append(f'<text x="{left + 4}" y="{y + 14}" fill="{colour}">off scale: {p50:.0f} / {p95:.0f} / '
                           f'{p99:.0f} &#8594;</text>')
            elif p50 is not None and p95 is not None and p99 is not None:
                x50, x95, x99 = (left + v * lat_scale for v in (p50, p95, p99))
                out.append(f'<line x1="{x95:.1f}" y1="{y + 10}" x2="{x99:.1f}" y2="{y + 10}" stroke="{colour}"/>')
                out.append(f'<line x1="{x99:.1f}" y1="{y + 5}" x2="{x99:.1f}" y2="{y + 15}" stroke="{colour}"/>')
                out.append(f'<rect x="{x50:.1f}" y="{y + 3}" width="{max(x95 - x50, 1):.1f}" height="14" '
                           f'fill="{colour}" opacity="0.55"/>')
                out.append(f'<line x1="{x50:.1f}" y1="{y + 1}" x2="{x50:.1f}" y2="{y + 19}" stroke="{colour}" '
                           f'stroke-width="2"/>')
                out.append(f'<text x="{x99 + 4:.1f}" y="{y + 14}" fill="#333">{p50:.1f} / {p95:.1f} / {p99:.1f}</text>')
            cpu = m["cpu_ms_per_frame"] or 0
            x0 = left + panel_w + gap
            out.append(f'<rect x="{x0}" y="{y + 3}" width="{cpu * cpu_scale:.1f}" height="14" fill="{colour}"/>')
            out.append(f'<text x="{x0 + cpu * cpu_scale + 4:.1f}" y="{y + 14}" fill="#333">{cpu:.2f}</text>')
            y += row_h
        y += 22
    for x0, ticks, scale in ((left, max_latency * 1.05, lat_scale), (left + panel_w + gap, max_cpu * 1.1, cpu_scale)):
        out.append(f'<line x1="{x0}" y1="50" x2="{x0}" y2="{y - 20}" stroke="#999"/>')
        step = nice_step(ticks)
        v = 0.0
        while v <= ticks:
            out.append(f'<line x1="{x0 + v * scale:.1f}" y1="{y - 20}" x2="{x0 + v * scale:.1f}" y2="{y - 15}" '
                       f'stroke="#999"/><text x="{x0 + v * scale:.1f}" y="{y - 2}" text-anchor="middle" '
                       f'fill="#555">{v:g}</text>')
            v += step
    still = [r for r in med if r.endswith("static")]
    if still:
        parts = ", ".join(f"{kind} {m['core_percent']:.1f}%" for kind, m in med[still[0]].items())
        out.append(f'<text x="10" y="{height - 22}" fill="#333">{still[0]} screen, % of a core: {parts}</text>')
    out.append(f'<text x="10" y="{height - 6}" fill="#777" font-size="10">{settings["when"]}, {settings["host"]}: '
               f'{settings["command"]}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def nice_step(span):
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100):
        if span / step <= 8:
            return step
    return 200


# MARK: main

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1280x720,1920x1080", help="comma-separated WxH (default: 720p and 1080p)")
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--bitrate", type=int, help="kbit/s (default: w x h x fps x 0.1)")
    parser.add_argument("--keyint", type=int,
                        help="frames between refreshes, for every sender (default: 150, a keyframe every 5 s at 30 fps, "
                             "for the peers' comparison; with --network, share's own unless --keying static)")
    parser.add_argument("--keying", choices=("handshake", "static"), default="handshake",
                        help="with --network: how share keys the session: a handshake, as `share send HOST` does (no "
                             "refresh sweeps: the receiver asks for a keyframe when it needs one), or a static SRTP key "
                             "(a sweep every --keyint frames, 150 unless given)")
    parser.add_argument("--scene-rate", type=int, metavar="HZ",
                        help="redraw the scene and its stamp together HZ times a second (e.g. 59, faster than the "
                             "capture rate, or 20, slower), so latency includes the wait for a change to be grabbed; "
                             "default: content at --fps and a fresh stamp 233 times a second")
    parser.add_argument("--scene-rates", default="59,20", metavar="HZ[,HZ]",
                        help="also run each size with the scene and its stamp redrawn together at these rates (59 is "
                             "faster than the capture rate, 20 slower: the wait for a change to be grabbed counts), "
                             "half as long as the main runs; 'none' to skip (default: 59,20)")
    parser.add_argument("--seconds", type=float, default=20, help="measured seconds per run")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--senders", default=",".join(ALL_SENDERS),
                        help="comma-separated: share, ffmpeg, gstreamer, and share[OPTIONS] for share with options of "
                             "`share send` added (e.g. 'share[--threads 2]'), measured side by side")
    parser.add_argument("--no-idle", action="store_true", help="skip the static-screen run")
    parser.add_argument("--no-audio", action="store_true", help="skip the run with audio")
    parser.add_argument("--headless-receiver", action="store_true",
                        help="the receiver decodes without a window (latency up to decoding)")
    parser.add_argument("--quick", action="store_true",
                        help="under two minutes: the first size only, 3 s runs, still screen, audio and scene rates once")
    parser.add_argument("--out", default=os.path.join(ROOT, "Benchmarks", "results"),
                        help="where results.md, results.json and results.svg go")
    parser.add_argument("--bin", default=DEFAULT_BIN, help="where share-send and share-recv are (default: the release build)")
    parser.add_argument("--network", help=f"measure share across simulated networks instead: a comma-separated list of "
                                          f"{', '.join(NETWORKS)}, or all")
    parser.add_argument("--scenes", default="moving,video", metavar="SCENE[,SCENE]",
                        help="with --network: the scenes each network sends, from " + ", ".join(SCENES)
                             + " (moving: `share scene --stamp`; video: a video playing beside scrolling text, hard to send)")
    parser.add_argument("--startup", type=int, metavar="N",
                        help="measure time to first picture instead: N sender starts per size and keying (a key file, "
                             "identities already known to each other)")
    args = parser.parse_args()
    global BIN
    BIN = args.bin
    if args.startup:
        return main_startup(args)
    if args.keyint is None and not (args.network and args.keying == "handshake"):
        args.keyint = 150
    if args.network:
        names = list(NETWORKS) if args.network == "all" else args.network.split(",")
        for name in names:
            if name not in NETWORKS:
                parser.error(f"unknown network {name!r}: choose from {', '.join(NETWORKS)}")
        for scene in args.scenes.split(","):
            if scene not in SCENES:
                parser.error(f"unknown scene {scene!r}: choose from {', '.join(SCENES)}")
        return main_network(args, names)
    if args.quick:
        args.sizes, args.seconds, args.repeats = args.sizes.split(",")[0], 3, 2
    senders = [s for s in args.senders.split(",") if s]
    for s in senders:
        if s not in ALL_SENDERS and not (family(s) == "share" and s.endswith("]")):
            parser.error(f"unknown sender {s!r}: choose from {', '.join(ALL_SENDERS)}, or share[OPTIONS] for share "
                         f"with options of `share send` added")
    for tool, needed in (("share-send", any(family(s) == "share" for s in senders)), ("share-recv", True),
                         ("ffmpeg", "ffmpeg" in senders), ("gst-launch-1.0", "gstreamer" in senders), ("Xvfb", True)):
        if needed and not (shutil.which(tool) or os.access(os.path.join(BIN, tool), os.X_OK)):
            raise SystemExit(f"harness: {tool} not found (run `make harness`, which builds and installs what it needs)")
    sizes = args.sizes.split(",")
    for size in sizes:
        try:
            w, h = (int(x) for x in size.split("x"))
        except ValueError:
            parser.error(f"size {size!r} is not WxH")

    try:
        scene_rates = [] if args.scene_rates == "none" else [int(r) for r in args.scene_rates.split(",") if r]
    except ValueError:
        parser.error(f"--scene-rates {args.scene_rates!r} is not a list of rates")

    # The plan: (label, size, static, audio, scene rate, seconds, repeats).
    plan = [(size, size, False, False, args.scene_rate, args.seconds, args.repeats) for size in sizes]
    side_seconds = max(3.0, args.seconds / 2)
    side_repeats = 1 if args.quick else args.repeats
    if not args.no_idle:
        plan.append((f"{sizes[0]} static", sizes[0], True, False, None, side_seconds, side_repeats))
    if not args.no_audio:
        plan.append((f"{sizes[0]} + audio", sizes[0], False, True, args.scene_rate, args.seconds, side_repeats))
    plan += [(f"{size} @ {rate} Hz", size, False, False, rate, side_seconds, side_repeats)
             for size in sizes for rate in scene_rates if rate != args.scene_rate]
    per_run_overhead = WARMUP + 1.2
    total = sum(len(senders) * repeats * (seconds + per_run_overhead) for *_, seconds, repeats in plan)
    runs = sum(len(senders) * repeats for *_, repeats in plan)
    progress = Progress(total, runs)

    work = tempfile.mkdtemp(prefix="share-harness-")
    key = make_key(work)

    results, pulse, tone = [], None, None
    try:
        for label, size, static, audio, scene_rate, seconds, repeats in plan:
            w, h = (int(x) for x in size.split("x"))
            bitrate = args.bitrate or max(300, int(w * h * args.fps * 0.1 / 1000))
            if audio and pulse is None:
                pulse, tone = start_pulse(work)
            display, xvfb = start_xvfb(size)
            receiver_display, receiver_xvfb = (None, None) if args.headless_receiver else start_xvfb(size, (display,))
            scene = [os.path.join(BIN, "share-send"), "scene", "--display", display, "--fps", str(args.fps), "--stamp"]
            if scene_rate:
                scene = scene[:-3] + ["--fps", str(scene_rate), "--stamp", "--stamp-rate", str(scene_rate)]
            scene_process = subprocess.Popen(scene + (["--static"] if static else []))
            run = {"size": size, "fps": args.fps, "bitrate": bitrate, "keyint": args.keyint, "display": display,
                   "receiver_display": receiver_display, "audio": audio, "seconds": seconds}
            try:
                time.sleep(0.5)
                for repeat in range(repeats):
                    for kind in senders:
                        progress.begin(f"{label}: {kind} ({repeat + 1}/{repeats})", seconds + per_run_overhead)
                        result = run_one(kind, run, key, work, pulse, progress)
                        result.update(run=label, repeat=repeat + 1, bitrate_kbps=bitrate)
                        results.append(result)
                        progress.end()
            finally:
                stop(scene_process)
                stop(xvfb)
                stop(receiver_xvfb)
    finally:
        progress.finish()
        for process in (tone, pulse):
            stop(process)

    med = medians(results)
    settings = {"when": time.strftime("%Y-%m-%d %H:%M"), "host": f"{os.cpu_count()} cores",
                "fps": args.fps, "keyint": args.keyint, "seconds": args.seconds, "repeats": args.repeats,
                "sizes": sizes, "senders": senders, "scene_rate": args.scene_rate,
                "command": " ".join(["python3 Benchmarks/harness.py", *sys.argv[1:]])}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"settings": settings, "medians": med, "results": results}, f, indent=2)
    table = markdown(settings, med)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(table)
    with open(os.path.join(args.out, "results.svg"), "w") as f:
        f.write(svg(settings, med))
    print(table)
    print(f"wrote {os.path.join(args.out, 'results.md')}, results.json and results.svg")
    shutil.rmtree(work, ignore_errors=True)


def startup_once(display, keying, key, work, env):
    """One sender start against a waiting receiver: the time from launching
    `share send` to the receiver decoding its first picture, and the
    sender's handshake time."""
    port = free_port()
    files = {n: os.path.join(work, f"startup-{n}.json") for n in ("send", "recv")}
    for path in files.values():
        if os.path.exists(path):
            os.remove(path)
    auth = ["--key-file", key["file"]] if keying == "key file" else ["--accept"]
    receive = [os.path.join(BIN, "share-recv"), "recv", "--port", str(port), "--no-window", "--no-audio",
               "--duration", "4", "--stats-json", files["recv"]] + auth
    receiver = subprocess.Popen(receive, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env["recv"])
    time.sleep(0.7)
    send = [os.path.join(BIN, "share-send"), "send", "127.0.0.1", "--port", str(port), "--display", display,
            "--audio", "none", "--duration", "1.5", "--stats-json", files["send"]] + auth
    started = time.time()
    sender = subprocess.Popen(send, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env["send"])
    sender.wait(timeout=20)
    receiver.wait(timeout=20)
    sent, received = (json.load(open(files[n])) for n in ("send", "recv"))
    first = received.get("firstPictureUnix")
    return {"keying": keying, "ttfp_ms": (first - started) * 1000 if first else None,
            "handshake_ms": sent.get("handshakeMilliseconds"), "frames_decoded": received.get("framesDecoded", 0)}


def main_startup(args):
    """Time to first picture: `share send` launched against a running
    `share recv`, until the receiver decodes a picture (process start, X
    connection, encoder, handshake, first capture and encode, decode)."""
    work = tempfile.mkdtemp(prefix="share-startup-")
    key = make_key(work)
    env = {}
    for side in ("send", "recv"):
        env[side] = dict(os.environ, XDG_CONFIG_HOME=os.path.join(work, f"config-{side}"))
    rows = []
    try:
        for size in args.sizes.split(","):
            display, xvfb = start_xvfb(size)
            scene = subprocess.Popen([os.path.join(BIN, "share-send"), "scene", "--display", display, "--fps", str(args.fps)])
            try:
                time.sleep(0.5)
                # The first identity run makes the two installs known to each other (not measured).
                startup_once(display, "identities", key, work, env)
                for keying in ("key file", "identities"):
                    samples = [startup_once(display, keying, key, work, env) for _ in range(args.startup)]
                    times = sorted(x["ttfp_ms"] for x in samples if x["ttfp_ms"] is not None)
                    handshakes = sorted(x["handshake_ms"] for x in samples if x["handshake_ms"] is not None)
                    rows.append({"size": size, "keying": keying, "runs": len(samples), "pictures": len(times),
                                 "ttfp_median_ms": times[len(times) // 2] if times else None,
                                 "ttfp_max_ms": times[-1] if times else None,
                                 "handshake_median_ms": handshakes[len(handshakes) // 2] if handshakes else None,
                                 "samples": samples})
                    print(f"{size} {keying}: time to first picture median {fmt(rows[-1]['ttfp_median_ms'])} ms, "
                          f"max {fmt(rows[-1]['ttfp_max_ms'])} ms; handshake {fmt(rows[-1]['handshake_median_ms'], 2)} ms")
            finally:
                stop(scene)
                stop(xvfb)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = ["| size | keying | runs | time to first picture median / max (ms) | handshake median (ms) |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['size']} | {r['keying']} | {r['pictures']}/{r['runs']} | "
                     f"{fmt(r['ttfp_median_ms'])} / {fmt(r['ttfp_max_ms'])} | {fmt(r['handshake_median_ms'], 2)} |")
    table = "\n".join(lines) + "\n"
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "startup.md"), "w") as f:
        f.write(table)
    with open(os.path.join(args.out, "startup.json"), "w") as f:
        json.dump({"when": time.strftime("%Y-%m-%d %H:%M"), "command": " ".join(["python3 Benchmarks/harness.py", *sys.argv[1:]]),
                   "rows": rows}, f, indent=2)
    print(table)


def make_key(work):
    """A fresh SRTP key file (mode 0600) in `work`, with its inline and hex forms."""
    raw = os.urandom(30)
    key = {"file": os.path.join(work, "bench.key"), "inline": base64.b64encode(raw).decode(), "hex": raw.hex()}
    fd = os.open(key["file"], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, f"AES_CM_128_HMAC_SHA1_80 inline:{key['inline']}\n".encode())
    os.close(fd)
    return key


# MARK: networks

NETWORKS = ("clean", "loss2", "loss5", "burst", "cap1m", "cap3m", "halving", "rtt100", "jitter20",
            "loss10", "drop", "fbloss", "deepq", "rtt400", "wifi")
# What each profile caps the path at over time (kbit/s), for the plot: (from second, kbit/s or None).
CAPS = {"cap1m": [(0, 1000)], "cap3m": [(0, 3000)], "halving": [(0, 4000), (8, 2000), (20, None)],
        "drop": [(0, 4000), (8, 400), (14, None)], "deepq": [(0, 1500)], "wifi": [(0, 2500)]}
# Profiles that need longer than --seconds to show what they test.
MIN_SECONDS = {"halving": 32, "drop": 26}
# The scenes a network run sends: `share scene --stamp` (text, shapes, a bar) and the one that is
# hard to send (a video playing beside scrolling text, `--video`).
SCENES = {"moving": [], "video": ["--video"]}
SETTLE = 3.0  # seconds after the start that "shown" and "frozen" leave out (the targets' "after that")


def at(timeline, seconds, key):
    """`key` at `seconds`, interpolated between the samples around it (0 before the first)."""
    previous = (0.0, 0.0)
    for sample in timeline:
        t, v = sample["seconds"], sample.get(key) or 0
        if t >= seconds:
            return v if t <= previous[0] else previous[1] + (v - previous[1]) * (seconds - previous[0]) / (t - previous[0])
        previous = (t, v)
    return previous[1]


def cap_change(caps):
    """The step down to the lowest cap and the step after it: ((second, kbit/s), lift second or None), or None
    when the path's cap never falls."""
    if len(caps) < 2:
        return None
    low = min((c for c in caps[1:] if c[1] is not None), key=lambda c: c[1], default=None)
    if low is None:
        return None
    after = [c[0] for c in caps if c[0] > low[0]]
    return low, (after[0] if after else None)


def run_network(name, scene_name, size, args, key, work):
    seconds = max(args.seconds, MIN_SECONDS.get(name, 0))
    display, xvfb = start_xvfb(size)
    receiver_display, receiver_xvfb = (None, None) if args.headless_receiver else start_xvfb(size, (display,))
    scene = subprocess.Popen([os.path.join(BIN, "share-send"), "scene", "--display", display, "--fps", str(args.fps),
                              "--stamp", *SCENES[scene_name]])
    port, relay_port = free_port(), free_port()
    files = {n: os.path.join(work, f"{name}-{n}.json") for n in ("send", "recv", "relay")}
    for path in files.values():
        if os.path.exists(path):
            os.remove(path)
    # A handshake keyed by the key file (what `share send HOST` does), or the static key through an SDP.
    if args.keying == "handshake":
        keyed_recv, keyed_send = ["--port", str(port), "--key-file", key["file"]], ["--key-file", key["file"]]
    else:
        sdp = os.path.join(work, "recv.sdp")
        write_secret(sdp, receiver_sdp(port, key, False))
        keyed_recv, keyed_send = ["--sdp", sdp], ["--srtp-key-file", key["file"]]
    keyed_send += ["--keyint", str(args.keyint)] if args.keyint else []
    processes = []
    try:
        time.sleep(0.5)
        receive = [os.path.join(BIN, "share-recv"), "recv", *keyed_recv, "--read-stamps", "--no-audio",
                   "--duration", str(seconds + 30), "--stats-json", files["recv"]]
        receive += ["--display", receiver_display] if receiver_display else ["--no-window"]
        receiver = subprocess.Popen(receive, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(receiver)
        received_from = time.monotonic()
        relay = subprocess.Popen([os.path.join(BIN, "share-relay"), "relay", "--listen", str(relay_port),
                                  "--to", f"127.0.0.1:{port}", "--network", name, "--stats-json", files["relay"]],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(relay)
        time.sleep(0.5)
        send = [os.path.join(BIN, "share-send"), "send", "127.0.0.1", "--port", str(relay_port), "--display", display,
                "--fps", str(args.fps), *keyed_send, "--audio", "none",
                "--duration", str(seconds), "--stats-json", files["send"]]
        if args.bitrate:
            send += ["--bitrate", str(args.bitrate)]
        sent_from = time.monotonic()
        result = subprocess.run(send, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=seconds + 60)
        if result.returncode != 0:
            raise SystemExit(f"harness: share send failed on {name}: {result.stderr[-2000:]}")
        time.sleep(TAIL + 0.5)
        stop(receiver, timeout=20)
        stop(relay)
    finally:
        for process in processes:
            stop(process)
        stop(scene)
        stop(xvfb)
        stop(receiver_xvfb)
    sent, received, relayed = (json.load(open(files[n])) for n in ("send", "recv", "relay"))
    # Where the sender's timeline starts on the receiver's.
    offset = sent.get("timelineOriginUnix", sent_from) - received.get("timelineOriginUnix", received_from)
    rate, samples = sent.get("rateTimeline", []), received.get("timeline", [])
    g2g = received.get("glassToGlass", {})
    # A frame encoded at SETTLE on the sender's clock is shown about one
    # latency later on the receiver's.
    shift = offset + (received.get("captureToDisplay", {}).get("p50") or g2g.get("p50") or 0) / 1000
    encoded = sent["framesEncoded"] - at(rate, SETTLE, "framesEncoded")
    shown = received["framesDecoded"] - at(samples, SETTLE + shift, "framesDecoded")
    frozen = received.get("freezeSeconds", 0) - at(samples, SETTLE + shift, "freezeSeconds")
    caps = CAPS.get(name, [])
    under, back = None, None
    change = cap_change(caps)
    if change:
        # Under the lowered cap how long after it fell, and back to the rate sent before it how long after it lifted.
        (fell, cap), lifted = change
        under = next((r["seconds"] - fell for r in rate if r["seconds"] >= fell and r["targetKbps"] <= cap), None)
        before = [r["sentKbps"] for r in rate if SETTLE <= r["seconds"] < fell and r["sentKbps"] is not None]
        if lifted is not None and before:
            earlier = statistics.mean(before)
            back = next((r["seconds"] - lifted for r in rate
                         if r["seconds"] >= lifted and (r["sentKbps"] or 0) >= 0.9 * earlier), None)
    elif caps:
        cap = caps[0][1]
        under = next((r["seconds"] for r in rate if r["targetKbps"] <= cap), None)
    return {
        "network": name, "scene": scene_name, "seconds": seconds,
        "longest_freeze": received.get("longestFreezeSeconds"), "seconds_back_after_lift": back, "frames_sent": sent["framesEncoded"], "frames_decoded": received["framesDecoded"],
        "shown_percent": 100 * shown / max(encoded, 1), "frozen_percent": 100 * frozen / max(seconds - SETTLE, 1),
        "freezes": received.get("freezes", 0),
        "g2g_p50": g2g.get("p50"), "g2g_p95": g2g.get("p95"), "g2g_p99": g2g.get("p99"),
        "retransmitted_percent": 100 * sent["packetsRetransmitted"] / max(sent["packetsSent"], 1),
        "keyframes": sent["keyframes"], "keyframe_requests": sent["keyframeRequests"],
        "mean_sent_kbps": statistics.mean([r["sentKbps"] for r in rate]) if rate else None,
        "seconds_to_under_cap": under, "relay": relayed,
        "rate": [{k: r.get(k) for k in ("seconds", "targetKbps", "sentKbps", "encoderKbps", "queueDelayMilliseconds",
                                        "bottleneckKbps", "delayVerdict", "limitedBy", "quantizer", "protectionGroup",
                                        "protectionCrossing", "roundTripMilliseconds")}
                 for r in rate],
        "caps": caps,
    }


def network_markdown(settings, rows):
    lines = [f"Network benchmark: {settings['when']}, {settings['host']}; {settings['size']} at {settings['fps']} fps, "
             f"`share` through `share relay`, scenes {', '.join(settings.get('scenes', ['moving']))} (moving: "
             f"`share scene --stamp`; video: `share scene --stamp --video`, a video playing beside scrolling text); "
             f"shown and frozen leave out the first {SETTLE:.0f} s; keyed by "
             + ("a handshake" if settings.get("keying", "static") == "handshake" else "a static key")
             + (f", a refresh sweep every {settings['keyint']} frames" if settings.get("keyint") else ", no refresh sweeps")
             + f". Command: `{settings['command']}`.", "",
             "| network | scene | frames shown | time frozen (freezes, longest s) | glass-to-glass p50 / p95 / p99 ms | "
             "retransmitted | keyframes (requests) | mean sent kbit/s | under the cap after | back after the lift |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        under = "-" if not r["caps"] else (f"{r['seconds_to_under_cap']:.1f} s" if r["seconds_to_under_cap"] is not None
                                             else "never")
        lifts = cap_change(r["caps"]) and cap_change(r["caps"])[1] is not None
        back = "-" if not lifts else (f"{r['seconds_back_after_lift']:.1f} s" if r["seconds_back_after_lift"] is not None
                                      else "never")
        longest = f"{r['longest_freeze']:.2f}" if r.get("longest_freeze") is not None else "-"
        lines.append(f"| {r['network']} | {r.get('scene', 'moving')} | {r['shown_percent']:.1f}% | "
                     f"{r['frozen_percent']:.2f}% ({r['freezes']}, {longest}) | "
                     f"{fmt(r['g2g_p50'])} / {fmt(r['g2g_p95'])} / {fmt(r['g2g_p99'])} | "
                     f"{r['retransmitted_percent']:.2f}% | {r['keyframes']} ({r['keyframe_requests']}) | "
                     f"{fmt(r['mean_sent_kbps'], 0)} | {under} | {back} |")
    return "\n".join(lines) + "\n"


def network_svg(rows):
    """The sender's target and sent rate over time, one panel per network, the cap dashed."""
    width, panel, left, top = 720, 120, 60, 24
    height = top + len(rows) * (panel + 30)
    top_rate = max([max([p["targetKbps"] or 0 for p in r["rate"]] + [p["sentKbps"] or 0 for p in r["rate"]] + [1])
                    for r in rows] + [1])
    step = nice_step(top_rate / 1000) * 1000 if top_rate > 1000 else 500
    ceiling = step * (int(top_rate // step) + 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           f'font-size="11">', f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="16" font-size="13">share: target (blue) and sent (orange) kbit/s over time; '
           f'the path\'s cap dashed</text>']
    for i, r in enumerate(rows):
        y0 = top + i * (panel + 30) + 14
        span = max(r["seconds"], 1)
        sx = lambda t: left + (width - left - 20) * min(t, span) / span
        sy = lambda v: y0 + panel - panel * min(v or 0, ceiling) / ceiling
        out.append(f'<text x="4" y="{y0 + 10}">{r["network"]}</text>')
        out.append(f'<text x="4" y="{y0 + 24}" fill="#666">{r.get("scene", "moving")}</text>')
        out.append(f'<rect x="{left}" y="{y0}" width="{width - left - 20}" height="{panel}" fill="none" stroke="#ccc"/>')
        for v in range(0, int(ceiling) + 1, int(step)):
            out.append(f'<text x="{left - 4}" y="{sy(v) + 4}" text-anchor="end" fill="#666">{v}</text>')
        for key, colour in (("targetKbps", "#1f77b4"), ("sentKbps", "#ff7f0e")):
            points = " ".join(f"{sx(p['seconds']):.1f},{sy(p[key]):.1f}" for p in r["rate"] if p[key] is not None)
            out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}"/>')
        caps = r["caps"] + [(span, None)]
        for (start, cap), (end, _) in zip(caps, caps[1:]):
            if cap is not None:
                out.append(f'<line x1="{sx(start):.1f}" x2="{sx(min(end, span)):.1f}" y1="{sy(cap):.1f}" y2="{sy(cap):.1f}" '
                           f'stroke="#444" stroke-dasharray="4 3"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main_network(args, names):
    size = args.sizes.split(",")[0]
    work = tempfile.mkdtemp(prefix="share-network-")
    key = make_key(work)
    rows = []
    scenes = args.scenes.split(",")
    runs = [(name, scene) for name in names for scene in scenes]
    for index, (name, scene) in enumerate(runs):
        print(f"[{index + 1}/{len(runs)}] network {name}, scene {scene}", file=sys.stderr, flush=True)
        rows.append(run_network(name, scene, size, args, key, work))
    settings = {"when": time.strftime("%Y-%m-%d %H:%M"), "host": f"{os.cpu_count()} cores", "size": size,
                "fps": args.fps, "seconds": args.seconds, "scenes": scenes, "keying": args.keying, "keyint": args.keyint,
                "command": " ".join(["python3 Benchmarks/harness.py", *sys.argv[1:]])}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "network.json"), "w") as f:
        json.dump({"settings": settings, "results": rows}, f, indent=2)
    table = network_markdown(settings, rows)
    with open(os.path.join(args.out, "network.md"), "w") as f:
        f.write(table)
    with open(os.path.join(args.out, "network.svg"), "w") as f:
        f.write(network_svg(rows))
    print(table)
    print(f"wrote {os.path.join(args.out, 'network.md')}, network.json and network.svg")
    shutil.rmtree(work, ignore_errors=True)


def start_pulse(work):
    """A private PulseAudio server with a 48 kHz null sink as default, a tone playing into it."""
    directory = os.path.join(work, "pulse")
    os.makedirs(directory, exist_ok=True)
    server = f"unix:{directory}/native"
    env = dict(os.environ, HOME=directory, XDG_RUNTIME_DIR=directory, PULSE_SERVER=server)
    pulse = subprocess.Popen(["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
                              "--load=module-null-sink sink_name=harness rate=48000",
                              f"--load=module-native-protocol-unix socket={directory}/native auth-anonymous=1"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(f"{directory}/native"):
            break
        time.sleep(0.05)
    subprocess.run(["pactl", "set-default-source", "harness.monitor"], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    os.environ.update(PULSE_SERVER=server, HOME=directory, XDG_RUNTIME_DIR=directory)
    tone = subprocess.Popen(["ffmpeg", "-v", "error", "-re", "-f", "lavfi", "-i",
                             "sine=frequency=440:sample_rate=48000", "-ac", "2", "-f", "pulse", "tone"],
                            env=env, stdin=subprocess.DEVNULL)
    time.sleep(1.0)
    return pulse, tone


if __name__ == "__main__":
    main()
