#!/usr/bin/env python3
"""Fan-out benchmark: one `share send --janus`, many WebRTC viewers through Janus.

Janus (Debian's package, configured by examples/fanout/janus-config.sh)
forwards the sender's one stream to N light WebRTC viewers (aiortc from
PyPI, in one separate process: ICE, DTLS, SRTP, RTCP and the jitter buffer
as a browser does them, but frames are only counted, not decoded, so the
viewers do not starve Janus of CPU on a small machine). For each N, Janus's
CPU (/proc/<pid>/stat) and resident memory are measured over a window while
all N receive, and a real headless Chromium then joins as one more viewer:
its time from asking to watch to the first picture on screen.

Then the sender's own cost of feeding several Janus servers (edges) from
one encode: for 1, 4 and 16 Janus processes, two `share send` runs each,
side by side in one run: copying to every edge itself (--janus-list), and
through an ingest Janus whose forwarders feed the edges (--janus-ingest):
its CPU per frame, footprint and upload, and the ingest's CPU.

    make bench-fanout                  # 0, 10, 50 and 100 viewers; 1, 4 and 16 edges; 10 s windows
    python3 Benchmarks/fanout.py --viewers 0,10,50,100 --edges 1,4,16 --seconds 10
    python3 Benchmarks/fanout.py --quick   # 2 viewers, 1 and 2 edges, 3 s (the test suite runs this)

Results: Benchmarks/results/fanout.md and fanout.json.
"""
import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import start_xvfb, stop  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


# MARK: the viewers (a process of their own: `fanout.py viewers ...`)

def janus_call(url, body, apisecret, timeout=10):
    body = dict(body, transaction=os.urandom(6).hex())
    if apisecret:
        body["apisecret"] = apisecret
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer = json.load(response)
    if answer.get("janus") == "error":
        raise RuntimeError(answer["error"]["reason"])
    return answer


def janus_event(url, apisecret, timeout=30):
    query = f"?maxev=1&rid={time.time_ns()}" + (f"&apisecret={apisecret}" if apisecret else "")
    deadline = time.time() + timeout
    while time.time() < deadline:
        with urllib.request.urlopen(url + query, timeout=timeout) as response:
            answer = json.load(response)
        for event in answer if isinstance(answer, list) else [answer]:
            if event.get("janus") == "event":
                return event
    raise RuntimeError("no event from Janus")


class Viewer:
    """One WebRTC viewer of a mountpoint: its own Janus session and peer connection."""

    def __init__(self, janus, mountpoint, pin, apisecret):
        self.janus, self.mountpoint, self.pin, self.apisecret = janus, mountpoint, pin, apisecret
        self.pc = None
        self.session = None

    async def start(self):
        from aiortc import RTCPeerConnection, RTCSessionDescription
        call = lambda url, body: asyncio.to_thread(janus_call, url, body, self.apisecret)
        self.session = (await call(self.janus, {"janus": "create"}))["data"]["id"]
        session_url = f"{self.janus}/{self.session}"
        handle = (await call(session_url, {"janus": "attach", "plugin": "janus.plugin.streaming"}))["data"]["id"]
        handle_url = f"{session_url}/{handle}"
        await call(handle_url, {"janus": "message", "body": {"request": "watch", "id": self.mountpoint, "pin": self.pin}})
        offer = await asyncio.to_thread(janus_event, session_url, self.apisecret)
        self.pc = RTCPeerConnection()
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=offer["jsep"]["sdp"], type=offer["jsep"]["type"]))
        await self.pc.setLocalDescription(await self.pc.createAnswer())
        local = self.pc.localDescription
        await call(handle_url, {"janus": "message", "body": {"request": "start"},
                                "jsep": {"type": local.type, "sdp": local.sdp}})

    async def keepalive(self):
        await asyncio.to_thread(janus_call, f"{self.janus}/{self.session}", {"janus": "keepalive"}, self.apisecret)

    async def close(self):
        if self.pc:
            await self.pc.close()
        if self.session:
            await asyncio.to_thread(janus_call, f"{self.janus}/{self.session}", {"janus": "destroy"}, self.apisecret)

    async def packets(self):
        if self.pc is None:
            return 0
        stats = await self.pc.getStats()
        return sum(s.packetsReceived for s in stats.values() if s.type == "inbound-rtp")


async def run_viewers(args):
    import aiortc.rtcrtpreceiver as receiver
    frames = {"video": 0, "audio": 0}

    class CountingDecoder:
        """Counts the frames the jitter buffer completes instead of decoding them."""

        def __init__(self, kind):
            self.kind = kind

        def decode(self, encoded_frame):
            frames[self.kind] += 1
            return []

    receiver.get_decoder = lambda codec: CountingDecoder("video" if codec.mimeType.startswith("video/") else "audio")
    viewers = [Viewer(args.janus, args.id, args.pin, args.apisecret) for _ in range(args.count)]
    # A few at a time: fifty DTLS handshakes at once starve the event loop
    # of the time to answer ICE checks.
    results = []
    for start in range(0, len(viewers), 3):
        results += await asyncio.gather(*(v.start() for v in viewers[start:start + 3]), return_exceptions=True)
    failures = [str(r) for r in results if isinstance(r, Exception)]
    # SIGINT or SIGTERM: hang up properly, so Janus stops forwarding to us at once.
    finished = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, finished.set)
    ticks = 0
    while not finished.is_set():
        try:
            await asyncio.wait_for(finished.wait(), 1)
            break
        except asyncio.TimeoutError:
            pass
        ticks += 1
        packets = await asyncio.gather(*(v.packets() for v in viewers))
        states = {}
        for v in viewers:
            state = v.pc.connectionState if v.pc else "none"
            states[state] = states.get(state, 0) + 1
        print(json.dumps({"viewers": len(viewers), "failed": len(failures), "errors": failures[:3], "states": states,
                          "receiving": sum(1 for p in packets if p > 0), "frames": frames["video"],
                          "audioFrames": frames["audio"],
                          "packets": sum(packets)}), flush=True)
        if ticks % 20 == 0:
            await asyncio.gather(*(v.keepalive() for v in viewers), return_exceptions=True)
    await asyncio.gather(*(v.close() for v in viewers), return_exceptions=True)


# MARK: the benchmark

def janus_sample(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
    return cpu, rss


def browser_join(link, apisecret, work, seconds=8):
    stats = os.path.join(work, "browser.json")
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "fanout", "watch.py"), f"{link}&apisecret={apisecret}",
                    "--seconds", str(seconds), "--stats", stats], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=seconds + 30)
    with open(stats) as f:
        return json.load(f) or {}


PER_PROCESS = 10  # viewers per viewer process: an asyncio loop keeps up with about this many


def measure(count, args, janus, link, mountpoint, pin, apisecret, work):
    groups = []
    for start in range(0, count, PER_PROCESS):
        size = min(PER_PROCESS, count - start)
        process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "viewers", "--janus", args.janus_url,
                                    "--id", str(mountpoint), "--pin", pin, "--count", str(size), "--apisecret", apisecret],
                                   stdout=subprocess.PIPE, stderr=open(os.path.join(work, f"viewers-{start}.log"), "w"), text=True)
        os.set_blocking(process.stdout.fileno(), False)
        groups.append({"process": process, "last": {}})

    def poll():
        for group in groups:
            for line in group["process"].stdout:
                group["last"] = json.loads(line)
        total = lambda key: sum(g["last"].get(key, 0) for g in groups)
        return {key: total(key) for key in ("receiving", "failed", "frames", "audioFrames")}

    deadline = time.time() + 30 + count
    state = poll()
    while groups and time.time() < deadline and state["receiving"] + state["failed"] < count:
        time.sleep(0.2)
        state = poll()
    time.sleep(1)
    state = poll()
    cpu0, _ = janus_sample(janus.pid)
    began = time.time()
    peak = 0
    while time.time() - began < args.seconds:
        time.sleep(0.5)
        peak = max(peak, janus_sample(janus.pid)[1])
    cpu1, rss = janus_sample(janus.pid)
    elapsed = time.time() - began
    end = poll()
    if end["receiving"] < count:
        print(json.dumps([g["last"] for g in groups]), file=sys.stderr)
    # The browser joins while Janus still forwards to all N (their peer
    # connections stay up), with the viewer processes stopped for those
    # seconds so they do not starve the browser of CPU on a small machine.
    for group in groups:
        group["process"].send_signal(signal.SIGSTOP)
    join = browser_join(link, apisecret, work)
    for group in groups:
        group["process"].send_signal(signal.SIGCONT)
        stop(group["process"])
    time.sleep(1)
    return {
        "viewers": count, "receiving": end["receiving"], "failed": end["failed"],
        "janusCorePercent": (cpu1 - cpu0) / elapsed * 100, "janusResidentMiB": max(peak, rss) / 1048576,
        "framesPerViewerPerSecond": (end["frames"] - state["frames"]) / elapsed / count if count else None,
        "audioFramesPerViewerPerSecond": (end["audioFrames"] - state["audioFrames"]) / elapsed / count if count else None,
        "browserJoinMs": join.get("joinMs"), "browserFramesDecoded": join.get("framesDecoded"),
    }


def start_janus(work, index, relay=False):
    """Janus number `index` of this run: its own configuration, HTTP port and
    RTP ports (250 each), started and waited for; with `relay`, its VideoRoom
    on too (an ingest). Returns its process, API address, secrets file and
    API secret."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        http_port = s.getsockname()[1]
    rtp_base = 20000 + ((os.getpid() % 2) * 20 + index) * 250  # below the ephemeral ports (32768)
    directory = os.path.join(work, f"janus-{index}")
    subprocess.run([os.path.join(ROOT, "examples", "fanout", "janus-config.sh"), directory, str(http_port), str(rtp_base)],
                   check=True, env=dict(os.environ, RELAY="1") if relay else None)
    log = os.path.join(work, f"janus-{index}.log")
    process = subprocess.Popen(["janus", "-C", os.path.join(directory, "janus.jcfg"), "-F", directory],
                               stdout=open(log, "w"), stderr=subprocess.STDOUT)
    for _ in range(400):
        if "HTTP webserver started" in open(log).read():
            break
        time.sleep(0.05)
    secrets = os.path.join(directory, "janus.secrets")
    apisecret = next(line.split("=", 1)[1].strip() for line in open(secrets) if line.startswith("api_secret"))
    return {"process": process, "url": f"http://127.0.0.1:{http_port}/janus", "secrets": secrets, "apisecret": apisecret}


AUDIO_KBPS = 96  # the tone's Opus stream, as configured (the statistics count video bytes only)


def rates(stats):
    """Frames a second, the stream's kbit/s (video measured, audio as configured)
    and CPU milliseconds a frame, from a --stats-json file's counters."""
    seconds = max(stats["elapsedSeconds"], 1e-9)
    frames = max(stats["framesEncoded"], 1)
    return (stats["framesEncoded"] / seconds, stats["bytesSent"] * 8 / seconds / 1000 + AUDIO_KBPS,
            stats["cpuSeconds"] * 1000 / frames)


def measure_edges(count, servers, args, display, work, ingest=None):
    """One `share send` feeding the first `count` servers for the window,
    directly or (given `ingest`) through it: its CPU per frame, peak
    footprint and RSS, what it uploaded, and the ingest's CPU."""
    feed = "tree" if ingest else "direct"
    listing = os.path.join(work, f"edges-{count}.list")
    with open(listing, "w") as f:
        for server in servers[:count]:
            f.write(f"{server['url']} {server['secrets']}\n")
    stats = os.path.join(work, f"edges-{count}-{feed}.json")
    log = os.path.join(work, f"edges-{count}-{feed}.log")
    relay = ["--janus-ingest", ingest["url"], "--janus-ingest-secrets", ingest["secrets"]] if ingest else []
    before = janus_sample(ingest["process"].pid)[0] if ingest else 0
    started = time.monotonic()
    result = subprocess.run([os.path.join(args.bin, "share"), "send", "--janus-list", listing, *relay, "--display", display,
                             "--audio-tone", "440", "--duration", str(args.seconds + 2), "--stats-json", stats],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT, timeout=args.seconds + 60)
    ingest_percent = (janus_sample(ingest["process"].pid)[0] - before) / (time.monotonic() - started) * 100 if ingest else None
    if result.returncode != 0:
        print(open(log).read(), file=sys.stderr)
        raise RuntimeError(f"share send to {count} edges ({feed}) failed")
    with open(stats) as f:
        s = json.load(f)
    if ingest:
        summary = next((line for line in open(log) if line.startswith("janus ingest ")), "")
        fed = int(summary.split(" keyframes for ", 1)[1].split()[0]) if " keyframes for " in summary else 0
    else:
        fed = sum(1 for d in s.get("destinations", []) if not d["dropped"]) if count > 1 else 1
    fps, kbps, cpu = rates(s)
    return {"edges": count, "feed": feed, "fed": fed, "cpuMsPerFrame": cpu, "fps": fps, "streamKbps": kbps,
            "uploadMbps": kbps * (1 if ingest else count) / 1000, "ingestCorePercent": ingest_percent,
            "peakFootprintMiB": s["peakFootprintBytes"] / 1048576, "peakResidentMiB": s["peakResidentBytes"] / 1048576}


def markdown_edges(rows, settings):
    base = rows[0]
    lines = [f"The sender feeding several Janus servers from one encode ({settings}): one `share send` run per row, "
             "side by side. *direct*: `--janus-list`, the packets copied to each server. *tree*: `--janus-ingest` as well, "
             "one stream up to an ingest Janus (a VideoRoom remote publisher) whose RTP forwarders pass the same SRTP "
             "packets on to each server. Nothing is encoded twice either way.", "",
             "| edges | feed | fed | CPU per frame (ms) | vs first row | fps | stream (kbit/s) | upload (Mbit/s) | "
             "ingest CPU (% of a core) | peak footprint (MiB) | peak RSS (MiB) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ingest = f"{r['ingestCorePercent']:.1f}" if r.get("ingestCorePercent") is not None else ""
        lines.append(f"| {r['edges']} | {r.get('feed', 'direct')} | {r['fed']} | {r['cpuMsPerFrame']:.2f} | "
                     f"{r['cpuMsPerFrame'] / base['cpuMsPerFrame']:.2f}x | {r['fps']:.1f} | {r['streamKbps']:.0f} | "
                     f"{r['uploadMbps']:.1f} | {ingest} | {r['peakFootprintMiB']:.1f} | {r['peakResidentMiB']:.1f} |")
    return "\n".join(lines) + "\n"


def per_viewer(rows, stream_kbps):
    """Janus's cost per viewer, from the rows with viewers against the one without:
    CPU (% of a core) per viewer and per Mbit/s forwarded, memory per viewer."""
    idle = next((r for r in rows if r["viewers"] == 0), None)
    for r in rows:
        if idle is None or r["viewers"] == 0:
            continue
        forwarded = r["receiving"] * stream_kbps / 1000
        r["forwardedMbps"] = forwarded
        r["janusCorePercentPerViewer"] = (r["janusCorePercent"] - idle["janusCorePercent"]) / r["viewers"]
        r["janusCorePercentPerMbps"] = (r["janusCorePercent"] - idle["janusCorePercent"]) / forwarded if forwarded else None
        r["janusMiBPerViewer"] = (r["janusResidentMiB"] - idle["janusResidentMiB"]) / r["viewers"]


def markdown(rows, settings):
    lines = [f"Fan-out through Janus ({settings}): Janus's CPU and memory while it forwards one `share send --janus` "
             "stream to N WebRTC viewers (aiortc, frames counted, not decoded), and a headless Chromium joining as one "
             "more: time from asking to watch to its first picture.", "",
             "| viewers | receiving | Janus CPU (% of a core) | Janus RSS (MiB) | CPU per viewer (%) | CPU per Mbit/s (%) | "
             "MiB per viewer | video / audio frames/s per viewer | browser join (ms) |",
             "|---|---|---|---|---|---|---|---|---|"]
    number = lambda r, key, form: form.format(r[key]) if r.get(key) is not None else "-"
    for r in rows:
        per = "-" if r["framesPerViewerPerSecond"] is None else \
            f"{r['framesPerViewerPerSecond']:.1f} / {r['audioFramesPerViewerPerSecond']:.1f}"
        lines.append(f"| {r['viewers']} | {r['receiving']} | {r['janusCorePercent']:.1f} | {r['janusResidentMiB']:.1f} | "
                     f"{number(r, 'janusCorePercentPerViewer', '{:.2f}')} | {number(r, 'janusCorePercentPerMbps', '{:.2f}')} | "
                     f"{number(r, 'janusMiBPerViewer', '{:.2f}')} | "
                     f"{per} | {r['browserJoinMs'] if r['browserJoinMs'] is not None else '-'} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode")
    v = sub.add_parser("viewers", help="(internal) run N light viewers and report once a second")
    v.add_argument("--janus", required=True)
    v.add_argument("--id", type=int, required=True)
    v.add_argument("--pin", required=True, help="the mountpoint's pin (its viewer link carries it)")
    v.add_argument("--count", type=int, required=True)
    v.add_argument("--apisecret")
    parser.add_argument("--viewers", default="0,10,50,100", help="comma-separated viewer counts")
    parser.add_argument("--edges", default="1,4,16", help="comma-separated counts of Janus servers one sender feeds")
    parser.add_argument("--seconds", type=float, default=10, help="measured seconds per count")
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--quick", action="store_true", help="2 viewers, 3 s: does the benchmark work")
    parser.add_argument("--out", help="where fanout.md and fanout.json go (default: Benchmarks/results; --quick: nowhere)")
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    args = parser.parse_args()
    if args.mode == "viewers":
        asyncio.run(run_viewers(args))
        return 0
    if args.quick:
        args.viewers, args.edges, args.seconds = "0,2", "1,2", 3
    counts = [int(n) for n in args.viewers.split(",")]
    edge_counts = [int(n) for n in args.edges.split(",") if n]
    work = tempfile.mkdtemp(prefix="share-fanout-")
    processes = []
    try:
        first = start_janus(work, 0)
        janus = first["process"]
        processes.append(janus)
        args.janus_url, secrets, apisecret = first["url"], first["secrets"], first["apisecret"]
        display, xvfb = start_xvfb(args.size)
        processes.append(xvfb)
        processes.append(subprocess.Popen([os.path.join(args.bin, "share"), "scene", "--display", display],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        duration = sum(args.seconds + 20 + n for n in counts) + 10
        send_log = os.path.join(work, "send.log")
        sender_stats = os.path.join(work, "send.json")
        sender = subprocess.Popen([os.path.join(args.bin, "share"), "send", "--janus", args.janus_url, "--janus-secrets", secrets,
                                   "--display", display, "--audio-tone", "440", "--duration", str(duration),
                                   "--stats-json", sender_stats],
                                  stdout=open(send_log, "w"), stderr=subprocess.STDOUT)
        processes.append(sender)
        link = mountpoint = None
        for _ in range(200):
            for line in open(send_log):
                if "watch: file://" in line:
                    link = line.split("watch: ", 1)[1].strip()
                    mountpoint = int(line.split("mountpoint ", 1)[1].split()[0])
                    pin = link.split("&pin=", 1)[1].split("&")[0]
            if link:
                break
            time.sleep(0.05)
        if not link:
            print(open(send_log).read(), file=sys.stderr)
            return 1
        rows = []
        for count in counts:
            row = measure(count, args, janus, link, mountpoint, pin, apisecret, work)
            print(json.dumps(row), flush=True)
            rows.append(row)
        # The sender's own figures over the viewer rows: the stream's rate.
        sender.send_signal(signal.SIGINT)
        sender.wait(timeout=30)
        with open(sender_stats) as f:
            stream_kbps = rates(json.load(f))[1]
        per_viewer(rows, stream_kbps)
        # Then the sender's cost by the number of servers it feeds.
        servers = [first] + [start_janus(work, index) for index in range(1, max(edge_counts, default=1))]
        processes += [server["process"] for server in servers[1:]]
        ingest = start_janus(work, len(servers), relay=True) if edge_counts else None
        if ingest:
            processes.append(ingest["process"])
        edge_rows = []
        for count in edge_counts:
            for relay in (None, ingest):
                row = measure_edges(count, servers, args, display, work, ingest=relay)
                print(json.dumps(row), flush=True)
                edge_rows.append(row)
        settings = f"{args.size} at 30 fps with a tone, {args.seconds:g} s windows, {os.cpu_count()} cores"
        out = args.out or (None if args.quick else os.path.join(ROOT, "Benchmarks", "results"))
        report = markdown(rows, settings) + ("\n" + markdown_edges(edge_rows, settings) if edge_rows else "")
        if out:
            os.makedirs(out, exist_ok=True)
            with open(os.path.join(out, "fanout.md"), "w") as f:
                f.write(report)
            with open(os.path.join(out, "fanout.json"), "w") as f:
                json.dump({"settings": settings, "streamKbps": stream_kbps, "rows": rows, "edges": edge_rows}, f, indent=2)
        print(report)
        ok = all(r["receiving"] == r["viewers"] and (r["browserFramesDecoded"] or 0) > 0 for r in rows)
        ok = ok and all(r["fed"] == r["edges"] for r in edge_rows)
        return 0 if ok else 1
    finally:
        for process in reversed(processes):
            stop(process)
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    sys.exit(main())
