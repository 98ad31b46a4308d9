#!/usr/bin/env python3
"""Picture quality beside cost: share, ffmpeg and GStreamer at the same target bitrate, and at a third of it.

Each sender captures a virtual X display where `share scene` draws a scene
that is a function of its frame number alone, with a stamp that carries the
number (`--stamp --number-frames`) and each frame drawn with the server held
(`--grab-server`), so no capture sees half a frame. The common receiver
(`share recv --save-frames`) keeps the first picture it shows of every Nth
frame, and for a still screen what was on screen 1 s and 5 s after the first
picture. After each scene, `share scene --render N` draws those frames again
on the same display and reads them back: the reference pictures. Each kept
picture is compared with its reference in luma (Y, in the colour space the
stream was decoded in, the stamp's rows left out):

- PSNR and SSIM (Gaussian window, 11 taps, sigma 1.5) over the picture;
- text legibility: SSIM over a region of small text only.

Rows: the moving scene, scrolling text, a still page of small text (after 1 s
and 5 s) and the video-like region, each at the default bitrate for the size
and at a third of it, with the bits each sender actually sent, its CPU per
frame and the frames it got across.

    make bench-quality
    python3 Benchmarks/quality.py --sizes 1280x720 --seconds 8
    python3 Benchmarks/quality.py --scenes text,still-text --senders share,ffmpeg --rates third
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (Xvfb, keys, the senders' commands, /proc sampling)

# The scenes: `share scene` options, whether the screen is still, and where its small text is
# (x, width as fractions of the picture's width; the rows below the stamp).
SCENES = {
    "moving": (["--stamp", "--number-frames", "--grab-server"], False, (0.0, 0.34)),
    "text": (["--text", "--stamp", "--number-frames", "--grab-server"], False, (0.0, 1.0)),
    "still-text": (["--text", "--static", "--stamp", "--number-frames"], True, (0.0, 1.0)),
    "video": (["--video", "--stamp", "--number-frames", "--grab-server"], False, (0.0, 0.38)),
}
RATES = {"full": 1.0, "third": 1 / 3}
STILL_AFTER = (1.0, 5.0)  # seconds after the first picture a still screen's quality is read at
SETTLE = 2.0  # seconds after the first picture that a moving scene's means leave out (every sender's first climb)


# MARK: pictures

def read_png(path):
    """RGB pixels (height x width x 3, uint8) of an 8-bit RGB PNG, as `share scene --render` writes."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"quality: {path} is not a PNG")
    at, idat, width, height = 8, b"", 0, 0
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            if (depth, colour) != (8, 2):
                raise SystemExit(f"quality: {path} is not 8-bit RGB")
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    rows = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + width * 3)
    if np.any(rows[:, 0] != 0):
        raise SystemExit(f"quality: {path} uses PNG row filters this reader does not undo")
    return rows[:, 1:].reshape(height, width, 3)


def read_y4m_luma(path):
    """The Y plane (height x width, uint8) of a one-picture Y4M file."""
    data = open(path, "rb").read()
    header, _, rest = data.partition(b"\n")
    fields = {f[:1]: f[1:] for f in header.split()[1:]}
    width, height = int(fields[b"W"]), int(fields[b"H"])
    frame = rest.index(b"\n") + 1  # "FRAME\n"
    return np.frombuffer(rest[frame:frame + width * height], dtype=np.uint8).reshape(height, width)


def luma(rgb, matrix, full_range):
    """Y of RGB pixels as a stream in this colour space carries it (float)."""
    kr, kb = {"bt601": (0.299, 0.114), "bt709": (0.2126, 0.0722), "bt2020": (0.2627, 0.0593)}[matrix]
    rgb = rgb.astype(np.float64)
    y = kr * rgb[..., 0] + (1 - kr - kb) * rgb[..., 1] + kb * rgb[..., 2]
    return y if full_range else 16 + y * 219 / 255


def psnr(a, b):
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 100.0 if mse == 0 else 10 * np.log10(255 ** 2 / mse)


def _blur(image):
    """A Gaussian blur (11 taps, sigma 1.5), 'valid' positions only, as SSIM's window."""
    taps = np.exp(-((np.arange(11) - 5) ** 2) / (2 * 1.5 ** 2))
    taps /= taps.sum()
    rows = sum(taps[i] * image[i:image.shape[0] - 10 + i, :] for i in range(11))
    return sum(taps[i] * rows[:, i:rows.shape[1] - 10 + i] for i in range(11))


def ssim(a, b):
    """Mean SSIM of two luma planes (Wang et al. 2004: Gaussian window, K1 0.01, K2 0.03)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    ma, mb = _blur(a), _blur(b)
    va, vb, cov = _blur(a * a) - ma * ma, _blur(b * b) - mb * mb, _blur(a * b) - ma * mb
    return float(np.mean(((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2))))


def stamp_rows(width):
    """Rows the numbered stamp's band may cover (FrameStamp: two block rows, margins), left out of every measure."""
    size = max(2, width // 64)
    return 6 * size


# MARK: runs

def run_one(kind, scene, size, bitrate, args, key, display, work):
    """One sender on one scene: returns its figures and the index of the pictures the receiver kept."""
    saved = os.path.join(work, f"saved-{scene}-{kind}-{bitrate}")
    shutil.rmtree(saved, ignore_errors=True)
    port = harness.free_port()
    stats, sdp = os.path.join(work, "recv.json"), os.path.join(work, "recv.sdp")
    harness.write_secret(sdp, harness.receiver_sdp(port, key, False))
    still = SCENES[scene][1]
    receive = [os.path.join(harness.BIN, "share-recv"), "recv", "--sdp", sdp, "--no-audio", "--no-window",
               "--duration", str(harness.WARMUP + args.seconds + 30), "--stats-json", stats, "--save-frames", saved,
               "--save-every", str(0 if still else args.every)]
    if still:
        receive += ["--save-after", ",".join(str(s) for s in STILL_AFTER)]
    receiver = subprocess.Popen(receive, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    run = {"size": size, "fps": args.fps, "bitrate": bitrate, "keyint": args.keyint, "display": display,
           "audio": False, "sender_stats": os.path.join(work, f"send-{kind}.out")}
    err = open(os.path.join(work, f"send-{kind}.err"), "w")
    command = harness.sender_command(kind, run, key, port, None)
    # The peers capture no pointer (ffmpeg's -draw_mouse 0, GStreamer's show-pointer=false): nor does share here.
    command += ["--cursor", "none"] if harness.family(kind) == "share" else []
    sender = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    started = time.monotonic()
    time.sleep(harness.WARMUP)
    first = harness.sample(sender.pid)
    last = first
    end = time.monotonic() + max(args.seconds, STILL_AFTER[-1] + 1 if still else 0)
    while time.monotonic() < end:
        time.sleep(0.1)
        last = harness.sample(sender.pid) or last
    harness.stop(sender)
    lifetime = time.monotonic() - started
    err.close()
    time.sleep(harness.TAIL)
    harness.stop(receiver, timeout=20)
    if first is None:
        raise SystemExit(f"quality: {kind} did not run: {open(os.path.join(work, f'send-{kind}.err')).read()[-2000:]}")
    try:
        received = json.load(open(stats))
        index = json.load(open(os.path.join(saved, "index.json")))
    except (OSError, json.JSONDecodeError) as error:
        raise SystemExit(f"quality: the receiver left no pictures or statistics for {kind} on {scene}: {error}")
    decoded = received["framesDecoded"]
    measured = lifetime - harness.WARMUP
    return {
        "sender": kind, "scene": scene, "bitrate_kbps": bitrate,
        "sent_kbps": received["bytes"] * 8 / max(received["elapsedSeconds"], 1e-9) / 1000,
        "cpu_ms_per_frame": (last[0] - first[0]) * 1000 / max(decoded / max(lifetime, 1) * measured, 1),
        "frames_decoded": decoded, "saved": saved, "index": index,
    }


def compare(result, references, width, height, every):
    """Adds PSNR, SSIM and text SSIM (per kept picture and their means) to a run's result."""
    top = stamp_rows(width)
    x0, span = SCENES[result["scene"]][2]
    left, right = int(x0 * width), int((x0 + span) * width)
    pictures = []
    for entry in result["index"]:
        number = entry.get("frame", 0) if entry.get("afterSeconds") is not None else entry["frame"]
        reference = references.get(number)
        if reference is None:
            continue
        shown = read_y4m_luma(os.path.join(result["saved"], entry["file"])).astype(np.float64)
        if shown.shape != (height, width):
            continue  # a picture at another size (the sender scaled it) has no reference
        wanted = luma(reference, entry["matrix"], entry["fullRange"])
        a, b = shown[top:], wanted[top:]
        # A control: the same picture against a later frame's reference
        # scores clearly lower, or the measure cannot tell frames apart.
        other = references.get(number + every) if entry.get("afterSeconds") is None else None
        control = None if other is None else ssim(a, luma(other, entry["matrix"], entry["fullRange"])[top:])
        pictures.append({"file": entry["file"], "frame": number, "after": entry.get("afterSeconds"),
                         "shown": entry["shownSeconds"], "control_ssim": control,
                         "psnr": psnr(a, b), "ssim": ssim(a, b), "text_ssim": ssim(a[:, left:right], b[:, left:right])})
    result["pictures"] = pictures
    for key in ("psnr", "ssim", "text_ssim", "control_ssim"):
        values = [p[key] for p in pictures if p["after"] is None and p["shown"] >= SETTLE and p[key] is not None]
        result[key] = statistics.mean(values) if values else None
    for after in STILL_AFTER:
        match = [p for p in pictures if p["after"] == after]
        result[f"ssim_{after:g}s"] = match[0]["ssim"] if match else None
        result[f"text_ssim_{after:g}s"] = match[0]["text_ssim"] if match else None
    del result["index"]


def render(scene, frames, display, work):
    """The reference pictures of `frames` of `scene`, drawn on `display` and read back."""
    out = os.path.join(work, f"ref-{scene}-%d.png")
    options = [o for o in SCENES[scene][0] if o in ("--text", "--video")]
    subprocess.run([os.path.join(harness.BIN, "share-send"), "scene", "--display", display, *options,
                    "--render", ",".join(str(f) for f in sorted(frames)), "--out", out], check=True)
    return {f: read_png(out.replace("%d", str(f))) for f in frames}


def run_scene(scene, size, args, key, work, senders):
    w, h = (int(x) for x in size.split("x"))
    default = args.bitrate or max(300, int(w * h * args.fps * 0.1 / 1000))
    display, xvfb = harness.start_xvfb(size)
    results = []
    try:
        for rate in args.rates.split(","):
            bitrate = max(100, int(default * RATES[rate]))
            for kind in senders:
                command = [os.path.join(harness.BIN, "share-send"), "scene", "--display", display, "--fps",
                           str(args.fps), *SCENES[scene][0]]
                scene_process = subprocess.Popen(command)
                try:
                    time.sleep(0.5)
                    print(f"quality: {size} {scene} at {bitrate} kbit/s ({rate}): {kind}", flush=True)
                    result = run_one(kind, scene, size, bitrate, args, key, display, work)
                finally:
                    harness.stop(scene_process)
                result.update(size=size, rate=rate)
                results.append(result)
        needed = {e.get("frame", 0) for r in results for e in r["index"]}
        references = render(scene, needed, display, work) if needed else {}
        for result in results:
            compare(result, references, w, h, args.every)
    finally:
        harness.stop(xvfb)
    return results


# MARK: report

def fmt(value, digits=4):
    return "" if value is None else f"{value:.{digits}f}"


def markdown(settings, rows):
    lines = [f"# Picture quality beside cost ({settings['when']}, {settings['host']})", "",
             f"`{settings['command']}`", "",
             f"{settings['fps']} fps, keyframe interval {settings['keyint']}, {settings['seconds']} s a run, "
             f"every {settings['every']}th frame kept, the first {SETTLE:g} s left out. Luma, the stamp's rows left out. Text SSIM is SSIM over "
             f"the scene's small text only. A still page is read 1 s and 5 s after its first picture.", "",
             "| size | scene | rate | sender | kbit/s target | kbit/s sent | CPU ms/frame | frames | PSNR dB | SSIM "
             "| text SSIM | SSIM 1 s / 5 s | text SSIM 1 s / 5 s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        still = r["scene"] == "still-text"
        lines.append(
            f"| {r['size']} | {r['scene']} | {r['rate']} | {r['sender']} | {r['bitrate_kbps']} | {r['sent_kbps']:.0f} "
            f"| {r['cpu_ms_per_frame']:.2f} | {r['frames_decoded']} | {fmt(r['psnr'], 2)} | {fmt(r['ssim'])} "
            f"| {fmt(r['text_ssim'])} | {fmt(r['ssim_1s']) + ' / ' + fmt(r['ssim_5s']) if still else ''} "
            f"| {fmt(r['text_ssim_1s']) + ' / ' + fmt(r['text_ssim_5s']) if still else ''} |")
    lines += ["", "SSIM to four places: at the top of the scale a difference that three places hide is still one "
              "a picture can have. Frames: pictures the receiver decoded in the run."]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1280x720")
    parser.add_argument("--scenes", default=",".join(SCENES), help=f"comma-separated: {', '.join(SCENES)}")
    parser.add_argument("--rates", default="full,third", help="full (the default bitrate for the size), third")
    parser.add_argument("--senders", default=",".join(harness.ALL_SENDERS))
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--bitrate", type=int, help="kbit/s of the full rate (default: w x h x fps x 0.1)")
    parser.add_argument("--keyint", type=int, default=150)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--every", type=int, default=10, help="keep every Nth frame of a moving scene")
    parser.add_argument("--bin", default=harness.DEFAULT_BIN)
    parser.add_argument("--out", default=os.path.join(harness.ROOT, "Benchmarks", "results"))
    args = parser.parse_args()
    harness.BIN = args.bin
    for scene in args.scenes.split(","):
        if scene not in SCENES:
            parser.error(f"unknown scene {scene!r}: choose from {', '.join(SCENES)}")
    for rate in args.rates.split(","):
        if rate not in RATES:
            parser.error(f"unknown rate {rate!r}: choose from {', '.join(RATES)}")
    senders = [s for s in args.senders.split(",") if s]
    work = tempfile.mkdtemp(prefix="share-quality-")
    key = harness.make_key(work)
    rows = []
    try:
        for size in args.sizes.split(","):
            for scene in args.scenes.split(","):
                rows += run_scene(scene, size, args, key, work, senders)
    finally:
        if not os.environ.get("QUALITY_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"quality: kept {work}")
    settings = {"when": time.strftime("%Y-%m-%d %H:%M"), "host": f"{os.cpu_count()} cores", "fps": args.fps,
                "keyint": args.keyint, "seconds": args.seconds, "every": args.every,
                "command": " ".join(["python3 Benchmarks/quality.py", *sys.argv[1:]])}
    for row in rows:
        row.pop("saved", None)
    harness.write_results(args.out, "quality", {"settings": settings, "rows": rows}, markdown(settings, rows))


if __name__ == "__main__":
    main()
