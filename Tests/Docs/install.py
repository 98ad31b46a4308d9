#!/usr/bin/env python3
"""`make install` as a packager runs it, checked: into a temporary root
(DESTDIR, PREFIX=/usr), every man page renders with `man -l`, bash loads the
completions and completes share's subcommands, the systemd user unit passes
`systemd-analyze verify` with nothing to say, its command really starts
`share recv` (recording into the Videos folder, and telling systemd it is
ready through $NOTIFY_SOCKET), the licence goes to share/doc/share, and
`make uninstall` leaves nothing behind.

    python3 Tests/Docs/install.py [CONFIGURATION]    # debug (what make test built) or release
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ["share", "share-send", "share-recv", "share-keygen", "share-ctl", "share-scene", "share-relay"]


def check(condition, what, problems):
    if not condition:
        problems.append(what)


def main():
    configuration = sys.argv[1] if len(sys.argv) > 1 else "debug"
    problems = []
    work = tempfile.mkdtemp(prefix="share-install-")
    try:
        destdir = os.path.join(work, "root")
        make = ["make", "--no-print-directory", "-C", ROOT, f"DESTDIR={destdir}", "PREFIX=/usr", f"CONFIGURATION={configuration}"]
        done = subprocess.run(make + ["install"], capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:])
            return 1
        usr = os.path.join(destdir, "usr")
        for name in ["share", "share-send", "share-recv", "share-relay"]:
            check(os.access(os.path.join(usr, "bin", name), os.X_OK), f"bin/{name} not installed", problems)
        for page in PAGES:
            path = os.path.join(usr, "share", "man", "man1", f"{page}.1")
            shown = subprocess.run(["man", "-l", path], capture_output=True, text=True, env=dict(os.environ, MANWIDTH="80"))
            command = page.replace("-", " ", 1)
            check(shown.returncode == 0 and "NAME" in shown.stdout and command in shown.stdout,
                  f"man -l {page}.1: {shown.returncode} {shown.stderr.strip()[:200]}", problems)
        bash = os.path.join(usr, "share", "bash-completion", "completions", "share")
        completed = subprocess.run(["bash", "-c", f'source "{bash}" && COMP_WORDS=(share re) COMP_CWORD=1 COMP_LINE="share re" '
                                    'COMP_POINT=8 && _share && echo "${COMPREPLY[@]}"'], capture_output=True, text=True)
        check(completed.returncode == 0 and set(completed.stdout.split()) >= {"recv", "relay"},
              f"bash completion of `share re`: {completed.stdout.strip()!r} {completed.stderr.strip()[:200]}", problems)
        for shell, path in [("zsh", "zsh/site-functions/_share"), ("fish", "fish/vendor_completions.d/share.fish")]:
            text = open(os.path.join(usr, "share", path)).read()
            check("send" in text and "recv" in text, f"{shell} completions lack the subcommands", problems)
        licence = os.path.join(usr, "share", "doc", "share", "LICENSE")
        check(os.path.isfile(licence) and open(licence).read() == open(os.path.join(ROOT, "LICENSE")).read(),
              "the licence is not installed in share/doc/share", problems)
        unit = os.path.join(usr, "share", "systemd", "user", "share-recv.service")
        text = open(unit).read()
        check("ExecStart=/bin/sh -c" in text and "/usr/bin/share recv" in text, "the unit does not start /usr/bin/share recv", problems)
        # systemd-analyze checks the command exists: point it into the temporary root.
        local = os.path.join(work, "share-recv.service")
        with open(local, "w") as f:
            f.write(text.replace("/usr/bin/share", os.path.join(usr, "bin", "share")))
        verified = subprocess.run(["systemd-analyze", "verify", local], capture_output=True, text=True,
                                  env=dict(os.environ, MANPATH=os.path.join(usr, "share", "man")))
        check(verified.returncode == 0 and not (verified.stdout + verified.stderr).strip(),
              f"systemd-analyze verify: {verified.returncode} {(verified.stdout + verified.stderr).strip()[:400]}", problems)
        problems += run_unit_command(local, work)
        subprocess.run(make + ["uninstall"], capture_output=True, text=True, check=True)
        left = [os.path.relpath(os.path.join(d, f), destdir) for d, _, files in os.walk(destdir) for f in files]
        check(not left, f"make uninstall left {left}", problems)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"make install and uninstall: {len(PAGES)} man pages render, bash completes, the unit verifies and starts share recv")
    return 0


def run_unit_command(unit, work):
    """The unit's ExecStart as systemd runs it (`$$` is a `$`), in a home of
    its own with options from the environment file's variable: it must say
    READY=1 once listening, and record into Videos/share/."""
    line = next(l for l in open(unit) if l.startswith("ExecStart="))
    command = line[len("ExecStart="):].strip()
    argv = [part.replace("$$", "$") for part in re.findall(r"'[^']*'|\S+", command)]
    argv = [a[1:-1] if a.startswith("'") else a for a in argv]
    home = os.path.join(work, "home")
    os.makedirs(home)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = os.path.join(work, "notify")
    listener.bind(path)
    listener.settimeout(20)
    env = dict(os.environ, HOME=home, NOTIFY_SOCKET=path, SHARE_RECV_OPTIONS="--port 0 --duration 2", XDG_CONFIG_HOME=home)
    env.pop("DISPLAY", None)
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    problems = []
    try:
        message = listener.recv(200).decode()
    except socket.timeout:
        message = ""
    output = process.communicate(timeout=30)[0]
    check(message.startswith("READY=1") and "listening on UDP port" in message,
          f"the unit's command sent no READY=1: {message!r} {output[-500:]}", problems)
    check(process.returncode == 0 and os.path.isdir(os.path.join(home, "Videos", "share")),
          f"the unit's command: exit {process.returncode}, no Videos/share: {output[-500:]}", problems)
    return problems


if __name__ == "__main__":
    sys.exit(main())
