#!/usr/bin/env python3
"""The documentation's links and options: every relative link in README.md,
CHANGELOG.md and docs/ resolves (the file, and the heading an anchor names),
and, given the built `share`, every option its commands' --help lists appears
in docs/usage.md.

    python3 Tests/Docs/links.py [path/to/share]
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
COMMANDS = ["send", "recv", "relay", "keygen", "ctl", "scene"]


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, fenced = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and line.startswith("#"):
                found.add(slug(line.lstrip("#")))
    return found


def documents():
    paths = [os.path.join(ROOT, name) for name in ("README.md", "CHANGELOG.md") if os.path.exists(os.path.join(ROOT, name))]
    docs = os.path.join(ROOT, "docs")
    paths += sorted(os.path.join(docs, name) for name in os.listdir(docs) if name.endswith(".md"))
    return paths


def broken_links():
    problems = []
    for path in documents():
        text = open(path, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
        for match in LINK.finditer(text):
            target = match.group(1) or match.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("<"):
                continue  # http:, https:, mailto:, file: ...
            file, _, anchor = target.partition("#")
            where = os.path.relpath(path, ROOT)
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(resolved):
                problems.append(f"{where}: {target}: no such file")
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                problems.append(f"{where}: {target}: no heading #{anchor}")
    return problems


def undocumented_options(share):
    usage = open(os.path.join(ROOT, "docs", "usage.md"), encoding="utf-8").read()
    missing = []
    for command in COMMANDS:
        result = subprocess.run([share, command, "--help"], capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            missing.append(f"share {command} --help failed: {result.stderr.strip()[:200]}")
            continue
        options = set(re.findall(r"^\s+(?:-\w, )?(--[a-z0-9][a-z0-9-]*)", result.stdout, flags=re.M))
        options -= {"--help", "--version"}
        for option in sorted(options):
            if not re.search(re.escape(option) + r"(?![a-z0-9-])", usage):
                missing.append(f"share {command} {option}: not in docs/usage.md")
    return missing


def main():
    problems = broken_links()
    if len(sys.argv) > 1:
        problems += undocumented_options(sys.argv[1])
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"every relative link resolves ({len(documents())} documents)"
          + ("; every option of share's commands is in docs/usage.md" if len(sys.argv) > 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
