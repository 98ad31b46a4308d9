#!/usr/bin/env python3
"""Side-by-side sender cost: share, ffmpeg and GStreamer doing the same job.

Each sender captures the same virtual X display (with the moving demo scene),
encodes H.264 with x264 (ultrafast, zerolatency, same bitrate, fps and keyframe
interval), packetizes to RTP and protects with SRTP (AES_CM_128_HMAC_SHA1_80)
to the same receiver (`share-recv --no-window`), one after another in one run.
For each sender it samples /proc/<pid> twice a second: CPU time (utime+stime),
footprint (RssAnon+RssShmem, as iOS counts it) and RSS; frames are counted by
the common receiver. Repeats each sender and prints medians and ratios.

    python3 Benchmarks/compare_senders.py --size 1280x720 --seconds 20 --repeats 2
"""
import argparse, base64, json, os, signal, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, ".build", "release")
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1] & ~1
    s.close()
    return port


def free_display():
    n = 120
    while os.path.exists(f"/tmp/.X11-unix/X{n}") or os.path.exists(f"/tmp/.X{n}-lock"):
        n += 1
    return f":{n}"


def sample(pid):
    """CPU seconds, footprint bytes, RSS bytes of a process (0s when gone)."""
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
        return cpu, (kb.get("RssAnon", 0) + kb.get("RssShmem", 0)) * 1024, kb.get("VmRSS", 0) * 1024
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def sender_command(kind, display, size, fps, kbps, keyint, key, port):
    w, h = size.split("x")
    if kind.startswith("share"):
        threads = ["--threads", kind.split(":")[1]] if ":" in kind else []
        audio = ["--audio", "system"] if "+audio" in kind else ["--audio", "none"]
        return [os.path.join(BIN, "share-send"), "send", *threads, *audio, "127.0.0.1", "--port", str(port), "--display", display,
                "--fps", str(fps), "--bitrate", str(kbps), "--keyint", str(keyint), "--key-file", key["file"]]
    if kind == "ffmpeg":
        return ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-f", "x11grab", "-framerate", str(fps),
                "-video_size", size, "-draw_mouse", "0", "-i", display, "-c:v", "libx264", "-preset", "ultrafast",
                "-tune", "zerolatency", "-profile:v", "baseline", "-pix_fmt", "yuv420p", "-b:v", f"{kbps}k",
                "-maxrate", f"{kbps}k", "-bufsize", f"{kbps // 2}k", "-g", str(keyint), "-f", "rtp",
                "-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", key["inline"],
                f"srtp://127.0.0.1:{port}?pkt_size=1200"]
    if kind == "gstreamer":
        return ["gst-launch-1.0", "-q", "ximagesrc", f"display-name={display}", "use-damage=false", "show-pointer=false",
                "!", f"video/x-raw,framerate={fps}/1", "!", "videoconvert", "!", "video/x-raw,format=I420", "!",
                "x264enc", "speed-preset=ultrafast", "tune=zerolatency", f"bitrate={kbps}", f"key-int-max={keyint}", "!",
                "video/x-h264,profile=constrained-baseline", "!",
                "rtph264pay", "config-interval=-1", "pt=96", "mtu=1200", "!", "srtpenc", f"key={key['hex']}",
                "rtp-cipher=aes-128-icm", "rtp-auth=hmac-sha1-80", "rtcp-cipher=aes-128-icm", "rtcp-auth=hmac-sha1-80",
                "!", "udpsink", "host=127.0.0.1", f"port={port}"]
    raise ValueError(kind)


def run_one(kind, args, display, key, work):
    port = free_port()
    stats = os.path.join(work, f"recv-{kind}.json")
    sdp = os.path.join(work, "recv.sdp")
    with open(sdp, "w") as f:
        f.write(f"v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=bench\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
                f"m=video {port} RTP/SAVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n"
                f"a=extmap:1 http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time\r\n"
                f"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:{key['inline']}\r\n")
    receiver = subprocess.Popen([os.path.join(BIN, "share-recv"), "recv", "--sdp", sdp, "--no-window",
                                 "--duration", str(args.seconds + 4), "--stats-json", stats],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    sender = subprocess.Popen(sender_command(kind, display, args.size, args.fps, args.bitrate, args.keyint, key, port),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # warm-up excluded from the measurement
    first = sample(sender.pid)
    peak_footprint = peak_rss = 0
    last = first
    end = time.time() + args.seconds
    while time.time() < end:
        time.sleep(0.5)
        s = sample(sender.pid)
        if s is None:
            break
        last = s
        peak_footprint = max(peak_footprint, s[1])
        peak_rss = max(peak_rss, s[2])
    sender.send_signal(signal.SIGINT)
    try:
        sender.wait(timeout=10)
    except subprocess.TimeoutExpired:
        sender.kill()
        sender.wait()
    receiver.wait(timeout=args.seconds + 15)
    with open(stats) as f:
        received = json.load(f)
    frames_in_window = args.fps * (last and first and args.seconds)
    cpu = (last[0] - first[0]) if first and last else float("nan")
    # CPU per frame over the measured window, at the frame rate the receiver saw.
    received_fps = received["framesDecoded"] / max(received["elapsedSeconds"] - 4.5, 1)
    frames = received_fps * args.seconds
    return {"sender": kind, "cpu_ms_per_frame": cpu * 1000 / max(frames, 1), "core_percent": cpu / args.seconds * 100,
            "peak_footprint_mib": peak_footprint / 1048576, "peak_rss_mib": peak_rss / 1048576,
            "frames_decoded": received["framesDecoded"], "received_fps": received_fps,
            "decode_errors": received["decodeErrors"], "lost": received["framesLost"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--bitrate", type=int, help="kbit/s (default: share's default for the size)")
    parser.add_argument("--keyint", type=int, default=150)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--senders", default="share,ffmpeg,gstreamer")
    parser.add_argument("--json", help="write the raw results here")
    parser.add_argument("--with-audio", action="store_true",
                        help="also run share+audio: system audio from a private PulseAudio playing a tone")
    args = parser.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    args.bitrate = args.bitrate or max(300, int(w * h * args.fps * 0.1 / 1000))
    display = free_display()
    work = tempfile.mkdtemp(prefix="share-bench-")
    raw = os.urandom(30)
    key = {"file": os.path.join(work, "bench.key"), "inline": base64.b64encode(raw).decode(), "hex": raw.hex()}
    fd = os.open(key["file"], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, f"AES_CM_128_HMAC_SHA1_80 inline:{key['inline']}\n".encode())
    os.close(fd)
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", f"{args.size}x24", "-nolisten", "tcp", "-noreset"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = []
    pulse = None
    if args.with_audio:
        pulse_dir = os.path.join(work, "pulse")
        os.makedirs(pulse_dir)
        env = dict(os.environ, HOME=pulse_dir, XDG_RUNTIME_DIR=pulse_dir, PULSE_SERVER=f"unix:{pulse_dir}/native")
        pulse = subprocess.Popen(["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
                                  "--load=module-null-sink sink_name=bench rate=48000",
                                  f"--load=module-native-protocol-unix socket={pulse_dir}/native auth-anonymous=1"],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        os.environ.update(PULSE_SERVER=env["PULSE_SERVER"], HOME=pulse_dir, XDG_RUNTIME_DIR=pulse_dir)
        tone = subprocess.Popen(["ffmpeg", "-v", "error", "-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                                 "-ac", "2", "-f", "pulse", "tone"], env=env)
        if "share+audio" not in args.senders:
            args.senders += ",share+audio"
    try:
        for _ in range(100):
            if os.path.exists(f"/tmp/.X11-unix/X{display[1:]}"):
                break
            time.sleep(0.05)
        scene = subprocess.Popen([os.path.join(BIN, "share-send"), "scene", "--display", display, "--fps", str(args.fps)])
        try:
            senders = args.senders.split(",")
            for round in range(args.repeats):
                for kind in senders:
                    print(f"[{round + 1}/{args.repeats}] {kind} at {args.size}, {args.fps} fps, {args.bitrate} kbit/s ...",
                          file=sys.stderr, flush=True)
                    results.append(run_one(kind, args, display, key, work))
        finally:
            scene.terminate()
            scene.wait()
    finally:
        xvfb.terminate()
        xvfb.wait()
        if pulse:
            tone.terminate()
            pulse.terminate()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"settings": vars(args), "results": results}, f, indent=2)
    medians = {}
    for kind in args.senders.split(","):
        rows = [r for r in results if r["sender"] == kind]
        medians[kind] = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "sender"}
    print(f"\n{args.size} at {args.fps} fps, {args.bitrate} kbit/s, keyframe every {args.keyint}, "
          f"{args.seconds:.0f} s x {args.repeats} (medians)\n")
    print("| sender | CPU ms/frame | % of a core | peak footprint MiB | peak RSS MiB | frames decoded | vs share (CPU) |")
    print("|---|---|---|---|---|---|---|")
    base = medians.get("share", {}).get("cpu_ms_per_frame")
    for kind, m in medians.items():
        ratio = f"{m['cpu_ms_per_frame'] / base:.2f}x" if base else "-"
        print(f"| {kind} | {m['cpu_ms_per_frame']:.2f} | {m['core_percent']:.1f} | {m['peak_footprint_mib']:.1f} | "
              f"{m['peak_rss_mib']:.1f} | {m['frames_decoded']:.0f} | {ratio} |")


if __name__ == "__main__":
    main()
