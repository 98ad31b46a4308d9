#!/usr/bin/env bash
# Writes a Janus configuration for share's fan-out into DIR: Debian's janus
# with only the streaming plugin and the HTTP transport, the API on
# 127.0.0.1:HTTP_PORT (/janus), UDP ports RTP_BASE..RTP_BASE+249 (200 for
# viewers' WebRTC connections, one each; 50 for mountpoints), an API
# secret and a streaming admin key (random unless given), and the secrets
# file `share send --janus-secrets` reads (DIR/janus.secrets, mode 0600).
# With HTTPS_PORT, CERT_PEM and CERT_KEY set, the API is also served over
# HTTPS on 127.0.0.1:HTTPS_PORT with that certificate (`share send --janus
# https://...`); set HTTPS_IP to listen elsewhere.
# With RELAY=1 the VideoRoom plugin is on too, behind the same admin key
# (rooms and RTP forwarders alike): a Janus that `share send --janus-ingest`
# relays through. Its remote publishers take ports in 10000-60000 (Janus
# 1.1 has no setting for that range).
# Start Janus with:  janus -C DIR/janus.jcfg -F DIR
#
#   [HTTPS_PORT=P CERT_PEM=F CERT_KEY=F] janus-config.sh DIR HTTP_PORT RTP_BASE [API_SECRET ADMIN_KEY]
#
# API_SECRET "none": no API secret, so viewers' pages need none (the admin
# key still guards creating mountpoints, and each mountpoint its pin).
set -euo pipefail
dir=$1 http_port=$2 rtp_base=$3
api_secret=${4:-api-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')}
admin_key=${5:-admin-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')}
libs=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/janus
mkdir -p "$dir/none"
list() { local out=""; for name in "$@"; do out="$out${out:+,}libjanus_$name.so"; done; echo "$out"; }

cat >"$dir/janus.jcfg" <<CFG
general: {
	configs_folder = "$dir"
	plugins_folder = "$libs/plugins"
	transports_folder = "$libs/transports"
	events_folder = "$dir/none"
	loggers_folder = "$dir/none"
	debug_level = 4
	$([ "$api_secret" = none ] || echo "api_secret = \"$api_secret\"")
}
media: { rtp_port_range = "$rtp_base-$((rtp_base + 199))" }
nat: { ice_enforce_list = "lo" }
plugins: { disable = "$(list audiobridge duktape echotest lua nosip recordplay sip textroom videocall voicemail \
	$([ -n "${RELAY:-}" ] || echo videoroom))" }
transports: { disable = "$(list mqtt nanomsg pfunix rabbitmq websockets)" }
CFG
if [ -n "${HTTPS_PORT:-}" ]; then
	https="https = true secure_port = $HTTPS_PORT secure_ip = \"${HTTPS_IP:-127.0.0.1}\""
	certificates="certificates: { cert_pem = \"$CERT_PEM\" cert_key = \"$CERT_KEY\" }"
else
	https="https = false" certificates=""
fi
cat >"$dir/janus.transport.http.jcfg" <<CFG
general: { json = "compact" base_path = "/janus" http = true port = $http_port ip = "127.0.0.1" $https }
admin: { admin_http = false }
$certificates
CFG
cat >"$dir/janus.plugin.streaming.jcfg" <<CFG
general: { admin_key = "$admin_key" rtp_port_range = "$((rtp_base + 200))-$((rtp_base + 249))" }
CFG
if [ -n "${RELAY:-}" ]; then
	cat >"$dir/janus.plugin.videoroom.jcfg" <<CFG
general: { admin_key = "$admin_key" lock_rtp_forward = true }
CFG
fi
(umask 077 && { [ "$api_secret" = none ] || printf 'api_secret = %s\n' "$api_secret"; printf 'admin_key = %s\n' "$admin_key"; } >"$dir/janus.secrets")
