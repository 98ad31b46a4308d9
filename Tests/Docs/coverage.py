#!/usr/bin/env python3
"""Every public symbol an embedder can reach must have a doc comment.

Reads the symbol graphs `swift package dump-symbol-graph` writes (the
directory is the first argument) and starts from every public symbol of the
embeddable modules (ShareSender, ShareReceiver); from there it follows the
types their declarations name (parameters, results, property types, enum
payloads) and those types' members, through the modules ShareSender and
ShareReceiver re-export. A member that implements a protocol requirement
(description, hash(into:)…) takes the protocol's documentation and is not
counted. Prints what lacks one and exits 1 when anything does.
"""
import collections
import glob
import json
import sys

EMBEDDABLE = ("ShareSender", "ShareReceiver")


def main(directory):
    symbols, members, inherited = {}, collections.defaultdict(list), set()
    for path in glob.glob(directory + "/Share*.symbols.json"):
        graph = json.load(open(path))
        module = graph["module"]["name"]
        for symbol in graph["symbols"]:
            if symbol["accessLevel"] in ("public", "open"):
                symbols[symbol["identifier"]["precise"]] = (module, symbol)
        for relation in graph["relationships"]:
            if relation["kind"] in ("memberOf", "requirementOf", "optionalRequirementOf"):
                members[relation["target"]].append(relation["source"])
            if relation["kind"] == "memberOf" and "sourceOrigin" in relation:
                inherited.add(relation["source"])
    if not any(module in EMBEDDABLE for module, _ in symbols.values()):
        sys.exit(f"no symbol graphs of {', '.join(EMBEDDABLE)} in {directory}")

    def named_types(symbol):
        fragments = list(symbol.get("declarationFragments", []))
        signature = symbol.get("functionSignature", {})
        for parameter in signature.get("parameters", []):
            fragments += parameter.get("declarationFragments", [])
        fragments += signature.get("returns", [])
        return {f["preciseIdentifier"] for f in fragments if "preciseIdentifier" in f}

    reached = {usr for usr, (module, _) in symbols.items() if module in EMBEDDABLE}
    queue = list(reached)
    while queue:
        _, symbol = symbols[queue.pop()]
        for usr in set(members.get(symbol["identifier"]["precise"], [])) | named_types(symbol):
            if usr in symbols and usr not in reached:
                reached.add(usr)
                queue.append(usr)

    missing = sorted(f"{symbols[usr][0]}: {'.'.join(symbols[usr][1]['pathComponents'])}"
                     for usr in reached if not symbols[usr][1].get("docComment") and usr not in inherited)
    counts = collections.Counter(symbols[usr][0] for usr in reached)
    print("public symbols an embedder reaches: " + ", ".join(f"{m} {n}" for m, n in sorted(counts.items())))
    for line in missing:
        print("undocumented: " + line)
    if missing:
        sys.exit(f"{len(missing)} public symbols have no documentation")
    print("every one is documented")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".build/x86_64-unknown-linux-gnu/symbolgraph")
