#!/bin/bash
# The memory soak: SECONDS (default 120) of 1080p30 moving content with system
# audio under a memory budget, share send to share recv on loopback. Needs a
# release build (make demo builds one). Usage: Benchmarks/soak.sh 32M [port] [seconds]
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
$B send 127.0.0.1 --port $port --display :$N --key-file $D/soak.key --audio system --duration $seconds --memory-budget $budget --stats-json $D/send.json > $D/send.log 2>&1
echo "exit $?"
wait $RP
kill $SP $XP $TP $PP 2>/dev/null
grep -E "memory" $D/send.log | head -5
python3 -c "
import json; s=json.load(open('$D/send.json')); r=json.load(open('$D/recv.json'))
print('budget $budget: peak footprint %.1f MiB, peak RSS %.1f MiB, rung %s, steps %d, frames sent %d decoded %d, audio packets %d' % (s['peakFootprintBytes']/1048576, s['peakResidentBytes']/1048576, s['memoryRung'], s['memorySteps'], s['framesEncoded'], r['framesDecoded'], s['audioPacketsSent']))"
# For comparison, in the same run: ffmpeg's and GStreamer's peak RSS and
# footprint for the same 1080p30 job (video only; they capture no audio here).
if [ "${COMPARE:-1}" = 1 ]; then
    python3 Benchmarks/harness.py --sizes 1920x1080 --seconds "$seconds" --repeats 1 --senders ffmpeg,gstreamer --no-idle --no-audio --out "$(mktemp -d)" 2>/dev/null | grep "^| 1920"
fi
