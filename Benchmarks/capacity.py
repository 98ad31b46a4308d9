#!/usr/bin/env python3
"""A capacity plan for many viewers, computed from the fan-out benchmark.

    python3 Benchmarks/capacity.py [--viewers 10000] [Benchmarks/results/fanout.json]

Reads what `make bench-fanout` measured (Janus's CPU per Mbit/s forwarded
and memory per viewer, at its largest viewer count; the sender's CPU per
frame by the number of Janus servers it feeds) and works out, for 720p30
and 1080p30 at the sender's default rates, how many edge servers and
cores the viewers need, what the sender uploads with direct copies and
with a tree, and which limit comes first. Every step is printed with its
inputs, so anyone can redo it. Writes Benchmarks/results/capacity.md
unless --out says otherwise.
"""
import argparse
import json
import math
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUDIO_KBPS = 96  # the default Opus stereo stream


def video_kbps(width, height, fps=30):
    """The sender's default video rate (H264Encoder.defaultBitrateKbps): 0.1 bit a pixel."""
    return max(300, int(width * height * fps * 0.1 / 1000))


def plan(fanout, size, args):
    width, height = size
    rate = (video_kbps(width, height) + AUDIO_KBPS) / 1000  # Mbit/s a viewer at most
    busiest = max((r for r in fanout["rows"] if r.get("janusCorePercentPerMbps") is not None), key=lambda r: r["viewers"])
    cpu_per_viewer = busiest["janusCorePercentPerMbps"] * rate  # % of a core
    mib_per_viewer = busiest["janusMiBPerViewer"]
    limits = {
        "egress bandwidth": math.floor(args.nic_gbps * 1000 * args.usable / rate),
        "Janus's CPU": math.floor(args.cores * 100 * args.usable / cpu_per_viewer),
        "memory": math.floor(args.memory_gib * 1024 * args.usable / max(mib_per_viewer, 0.01)),
    }
    first = min(limits, key=limits.get)
    per_edge = limits[first]
    edges = math.ceil(args.viewers / per_edge)
    edge_rows = sorted(fanout.get("edges", []), key=lambda r: r["edges"])
    direct = [r for r in edge_rows if r.get("feed", "direct") == "direct"]
    tree = [r for r in edge_rows if r.get("feed") == "tree"]
    sender_line = tree_line = "-"
    if len(direct) >= 2:
        low, high = direct[0], direct[-1]
        slope = (high["cpuMsPerFrame"] - low["cpuMsPerFrame"]) / (high["edges"] - low["edges"])
        sender_ms = low["cpuMsPerFrame"] + slope * (edges - low["edges"])
        sender_line = (f"{low['cpuMsPerFrame']:.2f} ms + {slope:.3f} ms x ({edges} - {low['edges']}) edges = {sender_ms:.2f} ms "
                       f"a frame at 720p ({sender_ms * 30 / 10:.1f}% of a core at 30 fps)")
    if len(tree) >= 2:
        low, high = tree[0], tree[-1]
        slope = (high["ingestCorePercent"] - low["ingestCorePercent"]) / (high["edges"] - low["edges"])
        ingest = low["ingestCorePercent"] + slope * (edges - low["edges"])
        tree_line = (f"the sender's upload and work do not grow with the edges ({low['cpuMsPerFrame']:.2f} ms a frame "
                     f"at {low['edges']} edge{'s' if low['edges'] != 1 else ''}, {high['cpuMsPerFrame']:.2f} ms at "
                     f"{high['edges']}, 720p, with every Janus on the same machine); the ingest Janus's CPU: "
                     f"{low['ingestCorePercent']:.1f}% + {slope:.2f}% x ({edges} - {low['edges']}) edges = "
                     f"**{ingest:.1f}% of a core** for {edges} edges (at 720p; it forwards packets, so scale by the rate), "
                     f"and its egress {edges} x {rate:.2f} = {edges * rate:.1f} Mbit/s")
    lines = [
        f"### {width}x{height} at 30 fps, {args.viewers} viewers",
        "",
        f"- Rate a viewer: {video_kbps(width, height)} kbit/s video (the sender's default, 0.1 bit a pixel) "
        f"+ {AUDIO_KBPS} kbit/s audio = **{rate:.2f} Mbit/s**; all viewers: {args.viewers} x {rate:.2f} = "
        f"**{args.viewers * rate / 1000:.1f} Gbit/s** of egress.",
        f"- Janus's CPU a viewer: {busiest['janusCorePercentPerMbps']:.2f}% of a core per Mbit/s forwarded "
        f"(measured at {busiest['viewers']} viewers) x {rate:.2f} = {cpu_per_viewer:.2f}%; all viewers: "
        f"**{args.viewers * cpu_per_viewer / 100:.0f} cores**.",
        "- (Janus's cost follows the packets it forwards; per Mbit/s holds across sizes because video packets are "
        "MTU-sized at both.)",
        f"- Janus's memory a viewer: {mib_per_viewer:.2f} MiB; all viewers: {args.viewers * mib_per_viewer / 1024:.1f} GiB.",
        f"- One edge ({args.cores} cores, {args.nic_gbps:g} Gbit/s, {args.memory_gib} GiB, each used to "
        f"{args.usable:.0%}) carries: " + ", ".join(f"{n} viewers by {k}" for k, n in limits.items())
        + f". **First limit: {first}**, {per_edge} viewers an edge.",
        f"- Edges: ceil({args.viewers} / {per_edge}) = **{edges}**.",
        f"- The sender's upload, copying to each edge itself: {edges} x {rate:.2f} = **{edges * rate:.1f} Mbit/s**; "
        f"with a tree (one ingest that relays): {rate:.2f} Mbit/s, and the ingest sends {edges * rate:.1f} Mbit/s.",
        f"- The sender's CPU feeding {edges} edges (the direct edges rows, straight line): {sender_line}.",
        f"- With a tree (the tree rows, straight line): {tree_line}.",
        "",
    ]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("fanout", nargs="?", default=os.path.join(ROOT, "Benchmarks", "results", "fanout.json"))
    parser.add_argument("--viewers", type=int, default=10000)
    parser.add_argument("--cores", type=int, default=16, help="cores of one edge machine")
    parser.add_argument("--nic-gbps", type=float, default=10, help="network interface of one edge, Gbit/s")
    parser.add_argument("--memory-gib", type=int, default=32, help="memory of one edge, GiB")
    parser.add_argument("--usable", type=float, default=0.7, help="share of each resource planned for use")
    parser.add_argument("--out", default=os.path.join(ROOT, "Benchmarks", "results", "capacity.md"))
    args = parser.parse_args()
    with open(args.fanout) as f:
        fanout = json.load(f)
    lines = [f"Capacity plan from `{os.path.relpath(args.fanout, ROOT)}` ({fanout['settings']}), "
             f"by `python3 Benchmarks/capacity.py`. Edge machines are assumptions: change them with the options.", ""]
    for size in [(1280, 720), (1920, 1080)]:
        lines += plan(fanout, size, args)
    text = "\n".join(lines)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
