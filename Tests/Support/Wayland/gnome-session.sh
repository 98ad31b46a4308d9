#!/bin/bash
# A headless GNOME session for tests and benchmarks, run by an unprivileged
# user inside `dbus-run-session` (compositors refuse root): PipeWire, then
# WirePlumber, then Mutter with one virtual monitor and XWayland; the
# desktop portal and its GNOME backend start when first asked.
#   gnome-session.sh RUNTIME_DIR WIDTHxHEIGHT
# Writes RUNTIME_DIR/session.env (the bus address) once Mutter's screen cast
# answers; lets X clients of root draw on XWayland (xhost); stops everything
# it started on SIGTERM.
set -u
export XDG_RUNTIME_DIR=$1
export XDG_CURRENT_DESKTOP=GNOME
size=$2
pids=()
stop() { kill "${pids[@]}" 2>/dev/null; wait; exit 0; }
trap stop TERM INT HUP
pipewire & pids+=($!)
for _ in $(seq 100); do [ -S "$XDG_RUNTIME_DIR/pipewire-0" ] && break; sleep 0.05; done
wireplumber & pids+=($!)
pipewire-pulse & pids+=($!)
mutter --headless --wayland --virtual-monitor "$size" & pids+=($!)
for _ in $(seq 200); do
    gdbus call --session --dest org.gnome.Mutter.ScreenCast --object-path /org/gnome/Mutter/ScreenCast \
        --method org.freedesktop.DBus.Properties.Get org.gnome.Mutter.ScreenCast Version >/dev/null 2>&1 && break
    sleep 0.05
done
# D-Bus-activated services (the portal and its GNOME backend, whose dialog
# is a Wayland window) start with these.
dbus-update-activation-environment XDG_CURRENT_DESKTOP WAYLAND_DISPLAY=wayland-0 XDG_RUNTIME_DIR
auth=$(ls "$XDG_RUNTIME_DIR"/.mutter-Xwaylandauth.* 2>/dev/null | head -1)
echo "SESSION_PID=$$" > "$XDG_RUNTIME_DIR/session.env.new"
echo "DBUS_SESSION_BUS_ADDRESS=$DBUS_SESSION_BUS_ADDRESS" >> "$XDG_RUNTIME_DIR/session.env.new"
echo "XAUTHORITY=$auth" >> "$XDG_RUNTIME_DIR/session.env.new"
mv "$XDG_RUNTIME_DIR/session.env.new" "$XDG_RUNTIME_DIR/session.env"
wait
