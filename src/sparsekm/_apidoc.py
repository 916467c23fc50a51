"""Write ``docs/api.md``, the API reference, from the docstrings.

Usage::

    python -m sparsekm._apidoc            # rewrite docs/api.md
    python -m sparsekm._apidoc --check    # exit 1 if docs/api.md is out of date

Covers every name in the ``__all__`` of the modules in :data:`MODULES`: its
signature, the summary of its docstring, and its numpydoc ``Parameters`` /
``Returns`` sections as written; for classes also the public methods with
their one-line summaries. Only the standard library (``inspect``) is used.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from pathlib import Path

__all__ = ["MODULES", "render", "main"]

#: Modules whose ``__all__`` is documented, in this order.
MODULES = (
    "sparsekm",
    "sparsekm.kernels",
    "sparsekm.expansion",
    "sparsekm.multiclass",
    "sparsekm.models",
    "sparsekm.reduced_set",
    "sparsekm.preimage",
    "sparsekm.approx",
    "sparsekm.approx.randomized",
    "sparsekm.approx.randomized.sampling",
    "sparsekm.approx.randomized.quantization",
    "sparsekm.approx.randomized.error_bounds",
    "sparsekm.approx.randomized.eigensolver",
    "sparsekm.approx.randomized.rounding",
    "sparsekm.sparse_learning",
    "sparsekm.compression",
    "sparsekm.geometry",
    "sparsekm.datasets",
    "sparsekm.persistence",
    "sparsekm.interop",
    "sparsekm.convert",
    "sparsekm.onnx_export",
    "sparsekm.quantize",
    "sparsekm.c_export",
    "sparsekm.deploy",
    "sparsekm.config",
    "sparsekm.backend",
    "sparsekm.parallel",
    "sparsekm.plotting",
    "sparsekm.reproduce",
)
_SECTIONS = ("Parameters", "Returns", "Yields", "Raises", "Attributes")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _anchor(qualname):
    # GitHub's and Python-Markdown's heading slugs: punctuation dropped, '_' and '-' kept.
    return re.sub(r"[^\w\- ]", "", qualname.lower()).replace(" ", "-")


def _signature(obj):
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return None
    return _ADDRESS.sub("", sig)


def _split_sections(doc):
    """``(summary, {section: [lines]})`` of a numpydoc docstring."""
    lines = doc.splitlines()
    sections, current, body = {}, None, []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and set(nxt.strip()) == {"-"} and len(nxt.strip()) >= 3:
            current = line.strip()
            sections[current] = []
            i += 2
            continue
        (sections[current] if current else body).append(line)
        i += 1
    paras = "\n".join(body).strip().split("\n\n")
    return paras[0].strip() if paras and paras[0].strip() else "", sections


def _param_list(lines):
    """numpydoc ``name : type`` + indented description -> Markdown bullets."""
    out, cur = [], None
    for line in lines:
        if not line.strip():
            continue
        if not line.startswith(" "):
            if cur:
                out.append(cur)
            head, _, typ = line.partition(" : ")
            cur = f"- `{head.strip()}`" + (f" ({typ.strip()})" if typ.strip() else "") + ":"
        elif cur is not None:
            cur += " " + line.strip()
    if cur:
        out.append(cur)
    return [re.sub(r"\s+", " ", re.sub(r":$", "", s)) for s in out]


def _doc_block(obj):
    doc = inspect.getdoc(obj) or ""
    summary, sections = _split_sections(doc)
    out = [summary or "*(no docstring)*", ""]
    for name in _SECTIONS:
        if name in sections and any(s.strip() for s in sections[name]):
            out += [f"**{name}**", "", *_param_list(sections[name]), ""]
    return out


def _methods(cls):
    out = []
    for name, member in sorted(vars(cls).items()):
        if name.startswith("_"):
            continue
        func = member.fget if isinstance(member, property) else member
        func = getattr(func, "__func__", func)
        if not callable(func) and not isinstance(member, property):
            continue
        doc = inspect.getdoc(func) or ""
        summary = _split_sections(doc)[0].replace("\n", " ")
        if isinstance(member, property):
            out.append(f"- `{name}` (property): {summary}")
        else:
            sig = _signature(func) or "(...)"
            sig = re.sub(r"^\((self|cls)(, )?", "(", sig)
            out.append(f"- `{name}{sig}`: {summary}")
    return out


def _home(obj, listed):
    """The module (among ``listed``) that documents ``obj``: where it is defined."""
    mod = getattr(obj, "__module__", None)
    if not isinstance(mod, str) or inspect.ismodule(obj):
        return None
    best = None
    for m in listed:
        if (mod == m or mod.startswith(m + ".")) and (best is None or len(m) > len(best)):
            best = m
    return best


def render(modules=MODULES):
    """The Markdown text of ``docs/api.md``."""
    mods = {name: importlib.import_module(name) for name in modules}
    documented = {}  # id(obj) -> qualified name of the one full entry
    for name, mod in mods.items():
        for attr in getattr(mod, "__all__", []):
            obj = getattr(mod, attr)
            home = _home(obj, modules)
            if home in mods and getattr(mods[home], attr, None) is obj \
                    and attr in getattr(mods[home], "__all__", []):
                documented.setdefault(id(obj), f"{home}.{attr}")
            else:
                documented.setdefault(id(obj), f"{name}.{attr}")
    entries = {name: [(attr, getattr(mod, attr),
                       documented[id(getattr(mod, attr))] == f"{name}.{attr}")
                      for attr in getattr(mod, "__all__", [])] for name, mod in mods.items()}
    out = ["# API reference", "",
           "<!-- Generated by `python -m sparsekm._apidoc` from the docstrings; do not edit by "
           "hand. tests/test_apidoc.py fails when this file is out of date. -->", "",
           "Every public name of the modules below (their `__all__`): signature, summary and "
           "the numpydoc parameters. The method pages (`docs/*.md`) explain the mathematics; "
           "the docstrings cite the papers' equation numbers.", ""]
    out += [f"- [`{name}`](#{_anchor(name)})" for name in modules] + [""]
    for name, mod in mods.items():
        out += [f"## `{name}`", ""]
        summary = _split_sections(inspect.getdoc(mod) or "")[0]
        if summary:
            out += [summary, ""]
        for attr, obj, full in entries[name]:
            qual = f"{name}.{attr}"
            if inspect.ismodule(obj) and obj.__name__ in mods:
                full, documented[id(obj)] = False, obj.__name__
            if not full:
                target = documented[id(obj)]
                if out[-1] == "" and out[-2].startswith("- `"):
                    out.pop()
                out += [f"- `{attr}`: see [`{target}`](#{_anchor(target)})", ""]
                continue
            if inspect.isclass(obj):
                kind = "exception" if issubclass(obj, BaseException) else "class"
            elif inspect.isfunction(obj) or inspect.isbuiltin(obj):
                kind = "function"
            elif inspect.ismodule(obj):
                kind = "module"
            else:
                kind = "data"
            sig = _signature(obj) if kind in ("class", "function") else None
            out += [f"### `{qual}`", "", f"*{kind}*" + (f" `{attr}{sig}`" if sig else ""), ""]
            if kind == "data":
                # Only immutable values: a registry or cache filled at run time would make
                # the file depend on what was imported before.
                if isinstance(obj, (str, int, float, bool, tuple, frozenset)):
                    text = _ADDRESS.sub("", repr(obj))
                    if len(text) > 200:
                        text = text[:200] + " ..."
                    out += [f"Value: `{text}`", ""]
                else:
                    out += [f"A `{type(obj).__name__}`.", ""]
                continue
            out += _doc_block(obj)
            if kind == "class" and not issubclass(obj, BaseException):
                methods = _methods(obj)
                if methods:
                    out += ["**Methods**", "", *methods, ""]
    return "\n".join(out).rstrip() + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sparsekm._apidoc", description=__doc__)
    parser.add_argument("--output", default="docs/api.md")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the file differs from the docstrings")
    args = parser.parse_args(argv)
    text = render()
    path = Path(args.output)
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is out of date: run python -m sparsekm._apidoc", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
