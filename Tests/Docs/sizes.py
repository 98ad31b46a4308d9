#!/usr/bin/env python3
"""Checks that no Swift source file under Sources/ is over 400 lines and no function, initializer
or closure-free body of one is over 80 (docs/architecture.md says why: a file is one job, and a
function reads as a list of steps). Counting is by braces, strings and comments left out. Run by
`make test`; prints what is too long and exits 1."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_FILE, MAX_FUNCTION = 400, 80
DECLARATION = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|internal|package|fileprivate|static|override|"
                         r"mutating|nonmutating|final|convenience|required|@discardableResult)\s+)*"
                         r"(func\s+[^\s(<]+|init[?!]?\s*[(<]|deinit\b)")


def code(line):
    """The line without string literals and a trailing comment."""
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    return line.split("//")[0]


def long_functions(lines):
    for start, line in enumerate(lines):
        match = DECLARATION.match(line)
        if not match:
            continue
        depth, opened, end = 0, False, start
        while end < len(lines):
            for character in code(lines[end]):
                if character == "{":
                    depth, opened = depth + 1, True
                elif character == "}":
                    depth -= 1
            if opened and depth <= 0:
                break
            end += 1
        if end - start + 1 > MAX_FUNCTION:
            yield start + 1, match.group(1).strip(), end - start + 1


def main():
    problems = []
    for directory, _, files in os.walk(os.path.join(ROOT, "Sources")):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(directory, name)
            lines = open(path, encoding="utf-8").read().split("\n")
            relative = os.path.relpath(path, ROOT)
            if len(lines) - 1 > MAX_FILE:
                problems.append(f"{relative}: {len(lines) - 1} lines (at most {MAX_FILE})")
            for line, what, length in long_functions(lines):
                problems.append(f"{relative}:{line}: {what} is {length} lines (at most {MAX_FUNCTION})")
    if problems:
        print("Too long:")
        for problem in problems:
            print("  " + problem)
        sys.exit(1)
    print(f"no source file over {MAX_FILE} lines, no function over {MAX_FUNCTION}")


main()
