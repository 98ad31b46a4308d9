#!/usr/bin/python3
"""Input into a headless GNOME session, as a person would give it, through
Mutter's RemoteDesktop D-Bus API (the session lives as long as this process's
bus connection). Reads commands on standard input, one a line, and answers
each with "ok" once Mutter took it:
    move X Y      the pointer to (X, Y) of the first monitor
    click X Y     there, and a click of the left button
    key KEYSYM    press and release a key (an X keysym, decimal or 0x hex)
    rotate N      turn the first monitor N quarter turns (0-3), as the
                  display settings do: its pictures change size
    cast          cast the first monitor (no pointer) for another program,
                  and answer "node ID": its PipeWire node (GStreamer's
                  pipewiresrc path=ID in the benchmarks)
Run as the session's user with the session's DBUS_SESSION_BUS_ADDRESS.
Debian's python3-dbus; no main loop is needed for calls alone."""
import json
import subprocess
import sys
import time

import dbus

MUTTER_RD = "org.gnome.Mutter.RemoteDesktop"
MUTTER_SC = "org.gnome.Mutter.ScreenCast"
BTN_LEFT = dbus.Int32(0x110)  # linux/input-event-codes.h


def rotate(bus, quarter_turns):
    config = dbus.Interface(bus.get_object("org.gnome.Mutter.DisplayConfig", "/org/gnome/Mutter/DisplayConfig"),
                            "org.gnome.Mutter.DisplayConfig")
    serial, monitors, logical, _ = config.GetCurrentState()
    connector = monitors[0][0][0]
    mode = next(m[0] for m in monitors[0][1] if m[6].get("is-current"))
    x, y, scale = logical[0][0], logical[0][1], logical[0][2]
    config.ApplyMonitorsConfig(serial, dbus.UInt32(1),
                               [(x, y, scale, dbus.UInt32(quarter_turns), True, [(connector, mode, {})])],
                               dbus.Dictionary({}, signature="sv"))


def video_nodes():
    dump = json.loads(subprocess.run(["pw-dump"], capture_output=True, text=True).stdout or "[]")
    return {o["id"] for o in dump if o.get("type", "").endswith("Node")
            and o.get("info", {}).get("props", {}).get("media.class") == "Stream/Output/Video"}


def hold_cast(bus, connector):
    """A screen cast of `connector` held as long as this process, and its PipeWire node (found as the
    video output node that appeared: python3-dbus hears no signal without a main loop)."""
    before = video_nodes()
    cast = dbus.Interface(bus.get_object(MUTTER_SC, "/org/gnome/Mutter/ScreenCast"), MUTTER_SC)
    path = cast.CreateSession(dbus.Dictionary({}, signature="sv"))
    session = dbus.Interface(bus.get_object(MUTTER_SC, path), MUTTER_SC + ".Session")
    session.RecordMonitor(connector, {"cursor-mode": dbus.UInt32(0)})
    session.Start()
    for _ in range(100):
        new = video_nodes() - before
        if new:
            return max(new)
        time.sleep(0.05)
    raise SystemExit("remote_input: the cast gave no PipeWire node")


def main():
    bus = dbus.SessionBus()
    desktop = dbus.Interface(bus.get_object(MUTTER_RD, "/org/gnome/Mutter/RemoteDesktop"), MUTTER_RD)
    session_path = desktop.CreateSession()
    session_object = bus.get_object(MUTTER_RD, session_path)
    session = dbus.Interface(session_object, MUTTER_RD + ".Session")
    session_id = session_object.Get(MUTTER_RD + ".Session", "SessionId",
                                    dbus_interface="org.freedesktop.DBus.Properties")
    # Absolute motion is given on a screen cast stream of the same session.
    cast = dbus.Interface(bus.get_object(MUTTER_SC, "/org/gnome/Mutter/ScreenCast"), MUTTER_SC)
    cast_path = cast.CreateSession({"remote-desktop-session-id": session_id})
    state = dbus.Interface(bus.get_object("org.gnome.Mutter.DisplayConfig", "/org/gnome/Mutter/DisplayConfig"),
                           "org.gnome.Mutter.DisplayConfig").GetCurrentState()
    connector = state[1][0][0][0]
    cast_session = dbus.Interface(bus.get_object(MUTTER_SC, cast_path), MUTTER_SC + ".Session")
    stream = cast_session.RecordMonitor(connector, {"cursor-mode": dbus.UInt32(0)})
    session.Start()
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "move" and len(words) == 3:
            session.NotifyPointerMotionAbsolute(stream, float(words[1]), float(words[2]))
        elif words[0] == "click" and len(words) == 3:
            session.NotifyPointerMotionAbsolute(stream, float(words[1]), float(words[2]))
            session.NotifyPointerButton(BTN_LEFT, True)
            session.NotifyPointerButton(BTN_LEFT, False)
        elif words[0] == "key" and len(words) == 2:
            keysym = dbus.UInt32(int(words[1], 0))
            session.NotifyKeyboardKeysym(keysym, True)
            session.NotifyKeyboardKeysym(keysym, False)
        elif words[0] == "cast":
            print("node %d" % hold_cast(bus, connector), flush=True)
        elif words[0] == "rotate" and len(words) == 2:
            rotate(bus, int(words[1]))
        else:
            print("unknown: " + line.strip(), flush=True)
            continue
        print("ok", flush=True)
    session.Stop()


if __name__ == "__main__":
    main()
