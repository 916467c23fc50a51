"""Paper reproductions, run with ``sparsekm reproduce NAME``.

Each module in this package registers one or more reproductions with
:func:`register`. A reproduction is a function ``run(ctx) -> Result`` that
prints nothing itself; the CLI prints the returned table (ours beside the
paper's) and the paths of the figures it wrote.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["register", "REGISTRY", "Result", "Context", "discover"]


@dataclass
class Context:
    """What a reproduction may use: output folder, seed, data folder, verbosity."""

    out_dir: Path = Path("figures")
    seed: int = 0
    data_path: str | None = None
    quick: bool = False
    progress: bool = True


@dataclass
class Result:
    """A reproduction's outcome: a Markdown table with ours beside the paper's."""

    name: str
    title: str
    table: str
    notes: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    seconds: float | None = None

    def to_markdown(self):
        lines = [f"## {self.title} (`sparsekm reproduce {self.name}`)", "", self.table, ""]
        lines += [f"- {n}" for n in self.notes]
        if self.seconds is not None:
            lines.append(f"- Run time: {self.seconds:.0f} s on this machine.")
        for f in self.figures:
            lines.append(f"- Figure: `{f}`")
        return "\n".join(lines) + "\n"


@dataclass
class _Entry:
    name: str
    description: str
    func: object
    slow: bool = False


REGISTRY: dict[str, _Entry] = {}


def register(name, description, slow=False):
    """Decorator registering ``func(ctx) -> Result`` as reproduction ``name``."""

    def deco(func):
        REGISTRY[name] = _Entry(name, description, func, slow)
        return func

    return deco


def discover():
    """Import every module of this package so that its reproductions register."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    return REGISTRY
