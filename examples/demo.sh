#!/usr/bin/env bash
# `make demo`: share's main job on an embedded default. A virtual X display
# with moving content, `share recv` recording (and showing, when this machine
# has a display) and `share send 127.0.0.1` for DURATION seconds, then a
# summary and a check of the recording with ffprobe. Everything it starts is
# stopped by PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${SHARE_BIN:-.build/release/share}
DURATION=${DURATION:-10}
SIZE=${SIZE:-1280x720}
OUT=${OUT:-out}
source examples/lib.sh

# A free X display number and a free UDP port.
n=$(free_display)
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1] & ~1)')

echo "demo: virtual display :$n at $SIZE, moving content, loopback port $port, $DURATION s"
Xvfb ":$n" -screen 0 "${SIZE}x24" -nolisten tcp -noreset >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -e "/tmp/.X11-unix/X$n" ] && break; sleep 0.05; done
[ -e "/tmp/.X11-unix/X$n" ] || { echo "demo: Xvfb did not start" >&2; exit 1; }

"$BIN" scene --display ":$n" >/dev/null 2>&1 &
pids+=($!)
"$BIN" keygen "$work/demo.key" 2>/dev/null

window=(--no-window)
if [ -n "${DISPLAY:-}" ] && xdpyinfo >/dev/null 2>&1; then window=(); echo "demo: showing the receiver window on $DISPLAY"; fi
mkdir -p "$OUT"
recording="$OUT/demo.mkv"
rm -f "$recording"
"$BIN" recv --port "$port" --key-file "$work/demo.key" "${window[@]}" --record "$recording" \
    --duration $((DURATION + 3)) --stats-json "$work/recv.json" >"$work/recv.log" 2>&1 &
receiver=$!
pids+=($receiver)
sleep 0.5
"$BIN" send 127.0.0.1 --port "$port" --display ":$n" --key-file "$work/demo.key" --duration "$DURATION" \
    --stats-json "$work/send.json" >"$work/send.log" 2>&1
wait "$receiver" || { echo "demo: the receiver failed:" >&2; cat "$work/recv.log" >&2; exit 1; }

frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
    -of default=noprint_wrappers=1:nokey=1 "$recording")
python3 - "$work/send.json" "$work/recv.json" "$frames" "$recording" <<'PY'
import json, sys
send, recv = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
probed, path = int(sys.argv[3] or 0), sys.argv[4]
def ms(summary, key):
    value = summary.get(key)
    return "-" if value is None else f"{value:.1f}"
lat = recv["captureToDisplay"]
fps = send["framesEncoded"] / send["elapsedSeconds"] if send["elapsedSeconds"] else 0
print(f"sent      {send['framesEncoded']} frames at {fps:.1f} fps, {send['bytesSent'] * 8 / send['elapsedSeconds'] / 1000:.0f} kbit/s"
      f" ({send['keyframes']} keyframes, {send['framesDroppedPoolExhausted'] + send['framesDroppedEncoderBusy']} dropped)")
shown = "shown" if recv["framesShown"] else "decoded"
print(f"received  {recv['framesDecoded']} frames {shown}, {recv['framesLost']} lost, {recv['decodeErrors']} decode errors")
print(f"latency   capture to display p50 {ms(lat, 'p50')} ms, p95 {ms(lat, 'p95')} ms, p99 {ms(lat, 'p99')} ms")
print(f"sender    {send['cpuSeconds'] * 1000 / max(send['framesEncoded'], 1):.2f} ms CPU per frame,"
      f" peak footprint {send['peakFootprintBytes'] / 1048576:.1f} MiB, peak RSS {send['peakResidentBytes'] / 1048576:.1f} MiB")
print(f"recording {path}: ffprobe reads {probed} frames ({recv['framesRecorded']} written)")
ok = probed > 0 and probed == recv["framesRecorded"] and recv["framesDecoded"] >= 0.95 * send["framesEncoded"]
print("demo: ok" if ok else "demo: FAILED")
sys.exit(0 if ok else 1)
PY
