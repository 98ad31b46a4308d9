#!/usr/bin/env python3
"""Open the viewer page in a headless Chromium and report what it shows.

    watch.py URL [--seconds N] [--screenshot out.png] [--stats out.json]

URL is the page address `share send --janus` prints. Chromium
(chromium-headless-shell from Debian) is driven through the DevTools
protocol on a pipe (no port, no extra package): every second the page's
statistics (window.shareStats) are printed as a JSON line; at the end a
screenshot of the page is saved and the last statistics written.
"""
import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


class DevTools:
    """The DevTools protocol over --remote-debugging-pipe: JSON messages
    ending in a NUL byte, Chromium reading fd 3 and writing fd 4."""

    def __init__(self, url, width, height):
        self.profile = tempfile.mkdtemp(prefix="share-viewer-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        # Debian's /usr/bin/chromium-headless-shell is a script that runs the
        # browser as its child: run the browser itself, in a session of its
        # own, so stopping it stops all of its processes.
        browser = "/usr/lib/chromium/chromium-headless-shell"
        if not os.access(browser, os.X_OK):
            browser = shutil.which("chromium-headless-shell")
        args = [browser, "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--mute-audio", "--autoplay-policy=no-user-gesture-required",
                "--disable-features=WebRtcHideLocalIpsWithMdns", f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}", url]

        def child_fds():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.process = subprocess.Popen(args, pass_fds=(3, 4), preexec_fn=child_fds, start_new_session=True,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        self.next_id = 0
        self.session = None

    def call(self, method, params=None, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.buffer:
                chunk = os.read(self.from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def attach_to_page(self):
        for _ in range(100):
            pages = [t for t in self.call("Target.getTargets", session=False)["targetInfos"] if t["type"] == "page"]
            if pages:
                result = self.call("Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True},
                                   session=False)
                self.session = result["sessionId"]
                return
            time.sleep(0.05)
        raise RuntimeError("no page in Chromium")

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result.get("result", {}).get("value")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))

    def close(self):
        # The whole session: the browser and every process it started.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--screenshot")
    parser.add_argument("--stats")
    parser.add_argument("--size", default="1280x900")
    options = parser.parse_args()
    width, height = (int(v) for v in options.size.split("x"))
    tools = DevTools(options.url, width, height)
    stats = None
    try:
        tools.attach_to_page()
        end = time.time() + options.seconds
        while time.time() < end:
            time.sleep(1)
            stats = json.loads(tools.evaluate("JSON.stringify(window.shareStats || null)") or "null")
            status = tools.evaluate("document.getElementById('status') && document.getElementById('status').textContent")
            print(json.dumps({"status": status, **(stats or {})}), flush=True)
        if options.screenshot:
            tools.screenshot(options.screenshot)
    finally:
        tools.close()
    if options.stats:
        with open(options.stats, "w") as out:
            json.dump(stats, out, indent=2)
    return 0 if stats and stats.get("framesDecoded", 0) > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
