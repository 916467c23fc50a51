"""Measure the package's structure: modules, import arrows, circles, arrows up the layers,
private names imported across modules and the largest functions.

Imports are read from the source (``ast``; nothing is executed), at module level and inside
functions alike. ``python tools/architecture.py`` prints the summary; ``--json`` the details.
The declared layer order is ``LAYERS`` below (``docs/architecture.md`` explains it);
``tests/test_layering.py`` asserts that no import goes up and that there is no circle.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "sparsekm"

#: Floors from the bottom up; a module may import its own floor or lower ones. The first
#: matching prefix (dotted, relative to ``sparsekm``) names a module's floor.
#: ``_constraints`` sits on the kernels floor: it states the estimators' parameter vocabulary,
#: whose ``kernel`` entry is the kernels' own (``Kernel``, ``KERNEL_NAMES``); every module
#: that uses it (``multiclass``, the solvers, ``models``) is higher.
LAYERS = (
    ("foundation", ("_version", "utils", "config", "backend", "_data_registry", "_fetch",
                    "_provenance")),
    ("kernels", ("kernels", "_constraints")),
    ("expansion", ("expansion", "geometry", "parallel")),
    ("io", ("_persistence", "persistence", "interop", "multiclass", "quantize", "convert")),
    ("solvers", ("preimage", "reduced_set", "approx", "sparse_learning")),
    ("models", ("models",)),
    ("applications", ("compression", "reproduce", "cli", "plotting", "onnx_export", "c_export",
                      "deploy", "datasets", "direct", "_apidoc", "__init__")),
)


def module_name(path):
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1] or ["__init__"]
    return ".".join(parts)


def floor(name):
    best = None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if name == p or name.startswith(p + "."):
                if best is None or len(p) > best[1]:
                    best = (i, len(p))
    return None if best is None else best[0]


def _absolute(node, path):
    if node.level == 0:
        return node.module or ""
    package = list(path.relative_to(SRC.parent).with_suffix("").parts)[:-1]
    if path.name == "__init__.py":
        package = list(path.relative_to(SRC.parent).parts)[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path, modules, source=None):
    """``(line, target module, imported name or None)`` for every import of a sparsekm
    module in ``path`` (``from . import x`` resolves to module ``x`` when it is one), at
    module level or inside functions; ``source``: the text to read instead of the file."""
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "sparsekm" or alias.name.startswith("sparsekm."):
                    out.append((node.lineno, _strip(alias.name, modules), None))
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node, path)
            if not (target == "sparsekm" or target.startswith("sparsekm.")):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if _strip(sub, modules) in modules and _strip(sub, modules) != _strip(
                        target, modules):
                    out.append((node.lineno, _strip(sub, modules), None))
                else:
                    out.append((node.lineno, _strip(target, modules), alias.name))
    return out


def _strip(dotted, modules):
    name = dotted[len("sparsekm."):] if dotted.startswith("sparsekm.") else "__init__"
    while name and name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def graph():
    files = sorted(SRC.rglob("*.py"))
    modules = {module_name(p): p for p in files}
    edges = {}
    for name, path in modules.items():
        for line, target, imported in imports(path, modules):
            if target != name and target in modules:
                edges.setdefault((name, target), []).append((line, imported))
    return modules, edges


def cycles(modules, edges):
    """Strongly connected components with more than one module (Tarjan)."""
    adj = {m: [] for m in modules}
    for a, b in edges:
        adj[a].append(b)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return sorted(out)


def _package_of(name):
    # ``persistence`` is the public face of the private package ``_persistence``: one package
    return name.split(".")[0].lstrip("_")


def measure():
    modules, edges = graph()
    # ``__init__`` files re-export their package: arrows into them are structure, not logic
    up = []
    private = []
    for (a, b), uses in sorted(edges.items()):
        fa, fb = floor(a), floor(b)
        if fa is not None and fb is not None and fb > fa:
            up.append({"from": a, "to": b, "lines": [u[0] for u in uses]})
        for line, imported in uses:
            if imported and imported.startswith("_") and not imported.startswith("__"):
                private.append({"from": a, "to": b, "name": imported, "line": line,
                                "across_packages": _package_of(a) != _package_of(b)})
    unplaced = sorted(m for m in modules if floor(m) is None)
    longest = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                longest.append((node.end_lineno - node.lineno + 1, f"{name}.{node.name}"))
    longest.sort(reverse=True)
    lines = {name: len(path.read_text(encoding="utf-8").splitlines())
             for name, path in modules.items()}
    return {
        "modules": len(modules),
        "import_arrows": len(edges),
        "circles": cycles(modules, edges),
        "up_arrows": up,
        "unplaced_modules": unplaced,
        "private_cross_imports": len(private),
        "private_cross_package_imports": sum(p["across_packages"] for p in private),
        "private_imports": private,
        "largest_functions": [{"lines": n, "function": f} for n, f in longest[:10]],
        "largest_modules": sorted(({"lines": n, "module": m} for m, n in lines.items()),
                                  key=lambda d: -d["lines"])[:10],
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print every detail as JSON")
    args = ap.parse_args(argv)
    m = measure()
    if args.json:
        print(json.dumps(m, indent=1))
        return 0
    print(f"modules: {m['modules']}; import arrows: {m['import_arrows']}")
    print(f"circles: {len(m['circles'])}")
    for c in m["circles"]:
        print("  " + " <-> ".join(c))
    print(f"imports up the layers: {len(m['up_arrows'])}")
    for u in m["up_arrows"]:
        print(f"  {u['from']} -> {u['to']} (lines {u['lines']})")
    if m["unplaced_modules"]:
        print(f"modules on no declared floor: {m['unplaced_modules']}")
    print(f"private names imported across modules: {m['private_cross_imports']} "
          f"({m['private_cross_package_imports']} across packages)")
    f = m["largest_functions"][0]
    print(f"largest function: {f['function']} ({f['lines']} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
