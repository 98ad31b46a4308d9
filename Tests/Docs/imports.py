#!/usr/bin/env python3
"""Checks that the imports in Sources/ match the graph docs/architecture.md states.

The graph is the fenced block marked `imports` there: one line a module, `Module: A B C`, the
modules of this package (and its C modules) that it may import. Fails when
- a source file imports a module of the package that its module's line does not list;
- a line and the module's dependencies in Package.swift differ;
- a Swift module under Sources/ has no line, or a line names no module.
Run by `make test`; prints what is wrong and exits 1."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def package_targets():
    """Every target of Package.swift under Sources/: name -> (path, dependencies)."""
    text = open(os.path.join(ROOT, "Package.swift")).read()
    targets = {}
    for match in re.finditer(r'\.(target|executableTarget|systemLibrary)\(name: "([^"]+)"(.*?)path: "([^"]+)"', text, re.S):
        _, name, middle, path = match.groups()
        dependencies = re.search(r'dependencies: \[(.*?)\]\s*,\s*$', middle, re.S)
        names = re.findall(r'"([^"]+)"', dependencies.group(1)) if dependencies else []
        # `.product(name: "X", package: "p")` names an outside product, not one of ours.
        outside = set(re.findall(r'\.product\(name: "([^"]+)", package: "([^"]+)"\)', middle))
        names = [n for n in names if not any(n in pair for pair in outside)]
        targets[name] = (path, set(names))
    for match in re.finditer(r'cLibrary\("(\w+)"', text):
        targets[match.group(1)] = (f"Sources/C/{match.group(1)}", set())
    return {name: t for name, t in targets.items() if t[0].startswith("Sources")}


def stated_graph():
    text = open(os.path.join(ROOT, "docs", "architecture.md")).read()
    block = re.search(r"```imports\n(.*?)```", text, re.S)
    if not block:
        sys.exit("docs/architecture.md: no ```imports block")
    graph = {}
    for line in block.group(1).splitlines():
        if line.strip():
            module, _, imports = line.partition(":")
            graph[module.strip()] = set(imports.split())
    return graph


def imports_in(path, ours):
    """Module -> files importing it, over the Swift files under `path`."""
    found = {}
    for directory, _, files in os.walk(os.path.join(ROOT, path)):
        for name in files:
            if not name.endswith(".swift"):
                continue
            file = os.path.join(directory, name)
            for line in open(file, encoding="utf-8"):
                match = re.match(r"^\s*(?:@\w+\s+)*(?:public |internal |package |private |fileprivate )?import (\w+)", line)
                if match and match.group(1) in ours:
                    found.setdefault(match.group(1), []).append(os.path.relpath(file, ROOT))
    return found


def main():
    targets = package_targets()
    graph = stated_graph()
    problems = []
    swift_modules = {n for n, (p, _) in targets.items() if not p.startswith("Sources/C/")}
    for module in sorted(swift_modules - graph.keys()):
        problems.append(f"{module}: a module of Package.swift with no line in the graph")
    for module in sorted(graph.keys() - targets.keys()):
        problems.append(f"{module}: in the graph but not a target of Package.swift under Sources/")
    for module in sorted(graph.keys() & targets.keys()):
        path, dependencies = targets[module]
        for imported in sorted(graph[module] - dependencies):
            problems.append(f"{module}: the graph lets it import {imported}, which Package.swift does not give it")
        for imported in sorted(dependencies - graph[module]):
            problems.append(f"{module}: Package.swift gives it {imported}, which the graph does not list")
        for imported, files in sorted(imports_in(path, targets.keys()).items()):
            if imported != module and imported not in graph[module]:
                problems.append(f"{module}: imports {imported} ({files[0]}), which the graph does not allow")
    if problems:
        print("The imports do not match docs/architecture.md:")
        for problem in problems:
            print("  " + problem)
        sys.exit(1)
    print(f"imports match docs/architecture.md ({len(graph)} modules)")


main()
