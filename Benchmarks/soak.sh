#!/bin/bash
# The memory soak: SECONDS (default 120; the README's figure is from 600) of
# 1080p30 moving content with system audio under a memory budget, share send
# to share recv on loopback. The sender's footprint (RssAnon + RssShmem) is
# sampled every second; the result is flat when the last minute's peak is
# within 1 MiB of the second minute's. Needs a release build (make demo builds
# one). Usage: Benchmarks/soak.sh [budget] [port] [seconds]
budget=${1:-50M}; port=${2:-5200}; seconds=${3:-120}
cd "$(dirname "$0")/.." && B=$PWD/.build/release/share; D=$(mktemp -d); export HOME=$D XDG_RUNTIME_DIR=$D
$B keygen $D/soak.key 2>/dev/null
pulseaudio -n --daemonize=no --exit-idle-time=-1 --use-pid-file=no --load="module-null-sink sink_name=share_test rate=48000" --load="module-native-protocol-unix socket=$D/native auth-anonymous=1" > /dev/null 2>&1 & PP=$!
sleep 1; export PULSE_SERVER=unix:$D/native
ffmpeg -v error -re -f lavfi -i sine=frequency=440:sample_rate=48000 -ac 2 -t $((seconds + 10)) -f pulse tone & TP=$!
N=$((150 + port % 50)); Xvfb :$N -screen 0 1920x1080x24 -nolisten tcp >/dev/null 2>&1 & XP=$!; sleep 0.5
$B scene --display :$N >/dev/null 2>&1 & SP=$!
$B recv --port $port --key-file $D/soak.key --no-window --no-audio --duration $((seconds + 4)) --stats-json $D/recv.json >/dev/null 2>&1 & RP=$!
sleep 0.3
# `share send` execs share-send, so this PID is the sender's.
$B send 127.0.0.1 --port $port --display :$N --key-file $D/soak.key --audio system --duration $seconds --memory-budget $budget --stats-json $D/send.json > $D/send.log 2>&1 & SEND=$!
start=$(date +%s.%N)
while kill -0 $SEND 2>/dev/null; do
    awk -v t="$(date +%s.%N)" -v s="$start" '/^RssAnon:/ {a=$2} /^RssShmem:/ {m=$2} END {if (a) printf "%.0f %d\n", t - s, a + m}' /proc/$SEND/status 2>/dev/null >> $D/footprint.txt
    sleep 1
done
wait $SEND; echo "exit $?"
wait $RP
kill $SP $XP $TP $PP 2>/dev/null
grep -E "memory" $D/send.log | head -5
python3 - "$D" "$budget" "$seconds" <<'PY'
import json, sys
d, budget, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3])
s, r = json.load(open(f'{d}/send.json')), json.load(open(f'{d}/recv.json'))
print('budget %s: peak footprint %.1f MiB, peak RSS %.1f MiB, rung %s, steps %d, frames sent %d decoded %d, audio packets %d' % (
    budget, s['peakFootprintBytes']/1048576, s['peakResidentBytes']/1048576, s['memoryRung'], s['memorySteps'],
    s['framesEncoded'], r['framesDecoded'], s['audioPacketsSent']))
samples = [(int(t), int(kb)) for t, kb in (line.split() for line in open(f'{d}/footprint.txt'))]
def peak(lo, hi):
    values = [kb for t, kb in samples if lo <= t < hi]
    return max(values) / 1024 if values else float('nan')
minutes = [(m, peak(60 * m, 60 * (m + 1))) for m in range(seconds // 60)]
print('footprint peak per minute (MiB): ' + ', '.join('%d: %.1f' % (m + 1, p) for m, p in minutes))
if seconds >= 180:
    second, last = peak(60, 120), peak(seconds - 60, seconds)
    verdict = 'flat' if abs(last - second) <= 1.0 else 'NOT flat'
    print('%s: last minute %.1f MiB vs second minute %.1f MiB (%+.1f MiB, %d samples)' % (verdict, last, second, last - second, len(samples)))
PY
# For comparison, in the same run: ffmpeg's and GStreamer's peak RSS and
# footprint for the same 1080p30 job (video only; they capture no audio here).
if [ "${COMPARE:-1}" = 1 ]; then
    python3 Benchmarks/harness.py --sizes 1920x1080 --seconds "$seconds" --repeats 1 --senders ffmpeg,gstreamer --no-idle --no-audio --out "$(mktemp -d)" 2>/dev/null | grep "^| 1920"
fi
