#!/usr/bin/env bash
# `make demo-fanout`: one encode, viewers in a browser. Janus (Debian's
# package, configured by janus-config.sh) on loopback, a virtual X display
# with moving content, `share send --janus` with a tone, and a headless
# Chromium on the viewer page for DURATION seconds; a screenshot of the
# page is saved to $OUT/fanout-viewer.png. Everything it starts is stopped
# by PID on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${SHARE_BIN:-.build/release/share}
DURATION=${DURATION:-10}
OUT=${OUT:-out}
source examples/lib.sh

n=$(free_display)
http_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rtp_base=$((20000 + RANDOM % 48 * 250))

echo "demo-fanout: Janus on 127.0.0.1:$http_port, display :$n, $DURATION s"
examples/fanout/janus-config.sh "$work/janus" "$http_port" "$rtp_base"
janus -C "$work/janus/janus.jcfg" -F "$work/janus" >"$work/janus.log" 2>&1 &
janus_pid=$!
pids+=($janus_pid)
Xvfb ":$n" -screen 0 1280x720x24 -nolisten tcp -noreset >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do
    [ -e "/tmp/.X11-unix/X$n" ] && grep -q "HTTP webserver started" "$work/janus.log" && break
    sleep 0.05
done
grep -q "HTTP webserver started" "$work/janus.log" || { echo "demo-fanout: Janus did not start" >&2; cat "$work/janus.log" >&2; exit 1; }

"$BIN" scene --display ":$n" >/dev/null 2>&1 &
pids+=($!)
"$BIN" send --janus "http://127.0.0.1:$http_port/janus" --janus-secrets "$work/janus/janus.secrets" --display ":$n" \
    --audio-tone 440 --duration $((DURATION + 3)) --stats-json "$work/send.json" >"$work/send.log" 2>&1 &
sender=$!
pids+=($sender)
for _ in $(seq 100); do grep -q "watch:" "$work/send.log" && break; sleep 0.05; done
link=$(grep -o 'file://[^ ]*' "$work/send.log" || true)
[ -n "$link" ] || { echo "demo-fanout: no mountpoint:" >&2; cat "$work/send.log" >&2; exit 1; }
grep "janus: mountpoint" "$work/send.log"
api_secret=$(sed -n 's/^api_secret = //p' "$work/janus/janus.secrets")
mkdir -p "$OUT"
cpu_before=$(awk '{print $14 + $15}' "/proc/$janus_pid/stat")
python3 examples/fanout/watch.py "$link&apisecret=$api_secret" --seconds "$DURATION" \
    --screenshot "$OUT/fanout-viewer.png" --stats "$work/viewer.json" >"$work/viewer.log" || true
cpu_after=$(awk '{print $14 + $15}' "/proc/$janus_pid/stat")
rss=$(awk '/VmRSS/ {print $2}' "/proc/$janus_pid/status")
wait "$sender" || { echo "demo-fanout: the sender failed:" >&2; cat "$work/send.log" >&2; exit 1; }
grep "removed" "$work/send.log" || true

python3 - "$work/send.json" "$work/viewer.json" "$OUT/fanout-viewer.png" "$cpu_before" "$cpu_after" "$rss" "$DURATION" <<'PY'
import json, os, sys
send = json.load(open(sys.argv[1]))
viewer = json.load(open(sys.argv[2])) or {}
shot, ticks, rss, seconds = sys.argv[3], int(sys.argv[5]) - int(sys.argv[4]), int(sys.argv[6]), float(sys.argv[7])
fps = send["framesEncoded"] / send["elapsedSeconds"] if send["elapsedSeconds"] else 0
print(f"sender    {send['framesEncoded']} frames at {fps:.1f} fps, {send['bytesSent'] * 8 / send['elapsedSeconds'] / 1000:.0f} kbit/s,"
      f" {send['plainKeyframeRequests']} keyframes asked for by Janus")
print(f"browser   {viewer.get('framesDecoded', 0)} frames decoded at {viewer.get('frameWidth')}x{viewer.get('frameHeight')},"
      f" {viewer.get('videoPacketsLost')} packets lost; first picture {viewer.get('joinMs')} ms after asking to watch;"
      f" {viewer.get('audioSamplesReceived', 0)} audio samples")
print(f"janus     {ticks / os.sysconf('SC_CLK_TCK') / seconds * 100:.1f}% of a core for one viewer, {rss / 1024:.1f} MiB resident")
print(f"screenshot {shot}")
ok = viewer.get("framesDecoded", 0) >= 0.9 * fps * (seconds - 1) and os.path.getsize(shot) > 0
print("demo-fanout: ok" if ok else "demo-fanout: FAILED")
sys.exit(0 if ok else 1)
PY
