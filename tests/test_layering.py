"""Layers stay one-way: foundation -> kernels -> expansion -> io -> solvers -> models ->
applications (``tools/architecture.py`` declares the floors; ``docs/architecture.md``).

Parses the imports of every module (nothing is executed), at module level and inside
functions, and fails on an import of a higher floor, on any import circle and on a module
placed on no floor.
"""

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "sparsekm"
SOLVERS = ("preimage.py", "reduced_set", "approx", "sparse_learning", "convert.py")
FORBIDDEN = ("sparsekm.models", "sparsekm.compression", "sparsekm.cli", "sparsekm.reproduce")


def _solver_files():
    for name in SOLVERS:
        p = SRC / name
        yield from (sorted(p.rglob("*.py")) if p.is_dir() else [p])


def _absolute(module, level, path):
    """The dotted name a (possibly relative) ``from ... import`` refers to."""
    if level == 0:
        return module or ""
    package = list(path.relative_to(SRC.parent).with_suffix("").parts)[:-1]
    if path.name == "__init__.py":
        package = list(path.relative_to(SRC.parent).parts)[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node.module, node.level, path)
            yield node.lineno, target
            for alias in node.names:  # ``from .. import models``
                yield node.lineno, f"{target}.{alias.name}"


def test_solver_files_found():
    files = list(_solver_files())
    assert len(files) >= 15
    assert SRC / "sparse_learning" / "svm_marginal.py" in files


@pytest.mark.parametrize("path", list(_solver_files()), ids=lambda p: str(p.relative_to(SRC)))
def test_solvers_do_not_import_higher_layers(path):
    bad = [f"line {line}: {name}" for line, name in _imports(path)
           if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)]
    assert not bad, f"{path.relative_to(SRC)} imports a higher layer: {bad}"


def test_compress_does_not_import_plotting():
    """plotting.compress_curve imports from compress; compress draws its report with
    matplotlib itself (the circle compress <-> plotting is gone)."""
    files = sorted((SRC / "compression").rglob("*.py"))
    assert len(files) >= 5
    bad = [(p.name, line, name) for p in files for line, name in _imports(p)
           if name == "sparsekm.plotting" or name.startswith("sparsekm.plotting.")]
    assert not bad


def test_one_model_conversion_for_compress_and_the_cli():
    """compress and ``sparsekm reduce`` convert a user's model with the same function."""
    import inspect

    from sparsekm import cli, convert
    from sparsekm.compression import _search

    assert "exact_model(" in inspect.getsource(cli.reducible)
    assert _search.exact_classifier is convert.exact_classifier
    assert "exact_classifier(" in inspect.getsource(_search._checked_original)
    assert not hasattr(_search, "_exact_classifier")
    assert convert.exact_classifier.__module__ == "sparsekm.convert"


def test_resolver_sees_relative_imports():
    # the checker itself: a relative import of models from approx/ is caught
    p = SRC / "approx" / "distributed.py"
    assert _absolute("models.kfd", 2, p) == "sparsekm.models.kfd"
    assert _absolute("fisher", 1, p) == "sparsekm.approx.fisher"
    assert _absolute(None, 2, SRC / "reduced_set" / "__init__.py") == "sparsekm"


def test_direct_alias_is_deprecated():
    import importlib
    import sys

    sys.modules.pop("sparsekm.direct", None)
    with pytest.warns(DeprecationWarning, match="sparse_learning"):
        direct = importlib.import_module("sparsekm.direct")
    from sparsekm import sparse_learning

    assert direct.slmc_shared_optimize is sparse_learning.slmc_shared_optimize
    # the alias re-exports the public API only, no private helper
    assert [n for n in vars(direct) if n.startswith("_") and not n.startswith("__")] == []


@pytest.mark.parametrize("old, new, names", [
    ("sparsekm.sparse_learning.slmc", "sparsekm.sparse_learning.svm_marginal",
     ("slmc_optimize", "slmc_shared_optimize", "OptimizeResult")),
    ("sparsekm.reproduce.slmc", "sparsekm.reproduce.wu2006", ("run_cell", "cell_code_key",
                                                              "_spread")),
])
def test_renamed_module_aliases_are_deprecated(old, new, names):
    import importlib
    import sys

    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        alias = importlib.import_module(old)
    renamed = importlib.import_module(new)
    for name in names:
        assert getattr(alias, name) is getattr(renamed, name)


def test_reproduce_discovery_skips_the_deprecated_alias():
    import sys

    from sparsekm import reproduce

    sys.modules.pop("sparsekm.reproduce.slmc", None)
    registry = reproduce.discover()
    assert "sparsekm.reproduce.slmc" not in sys.modules
    assert {"wu-table1", "wu-table2", "wu-table3", "usps-3-vs-8"} <= set(registry)
    assert registry["wu-table1"].module == "sparsekm.reproduce.wu2006"


def test_version_lives_in_a_leaf_module():
    # the persistence layer and the provenance stamp read the version without importing
    # the package: ``_version`` imports nothing
    import sparsekm
    from sparsekm import _version

    assert list(_imports(SRC / "_version.py")) == []
    assert sparsekm.__version__ == _version.__version__


@pytest.mark.parametrize("low, high", [("config.py", "sparsekm.backend"),
                                       ("_constraints.py", "sparsekm.kernels._STRING_KERNELS"),
                                       ("_provenance.py", "sparsekm.__init__")])
def test_foundation_does_not_import_up(low, high):
    names = {name for _, name in _imports(SRC / low)}
    assert high not in names and not any(n.startswith(high + ".") for n in names)
    if high == "sparsekm.__init__":  # ``from . import __version__`` names the package
        assert "sparsekm.__version__" not in names


def test_a_hook_without_its_provider_names_the_module_to_import():
    from sparsekm.utils.hooks import Hook

    hook = Hook("X.from_estimator", "sparsekm.interop")
    with pytest.raises(TypeError, match="import sparsekm.interop"):
        hook(object())
    assert hook.register(len) is len
    assert hook([1, 2, 3]) == 3
    with pytest.raises(TypeError, match="callable"):
        hook.register(3)


def test_lower_layers_reach_interop_through_its_registered_converters():
    from sparsekm import expansion, interop, multiclass

    assert expansion.estimator_to_expansion._fn is interop.expansion_from_estimator
    assert multiclass.estimator_to_classifier._fn is interop.classifier_from_estimator


# -- every module against the declared floors (tools/architecture.py) -----------------------
def _architecture():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tools" / "architecture.py"
    spec = importlib.util.spec_from_file_location("_sparsekm_architecture", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ARCH = _architecture()
MODULES, EDGES = ARCH.graph()


def test_every_module_is_on_a_declared_floor():
    assert len(MODULES) > 60
    assert [m for m in MODULES if ARCH.floor(m) is None] == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_goes_up_the_floors(module):
    here = ARCH.floor(module)
    up = [f"{target} (floor {ARCH.LAYERS[ARCH.floor(target)][0]}, lines "
          f"{sorted({line for line, _ in uses})})"
          for (a, target), uses in EDGES.items() if a == module and ARCH.floor(target) > here]
    assert up == [], f"{module} (floor {ARCH.LAYERS[here][0]}) imports up: {up}"


def test_no_import_circle():
    assert ARCH.cycles(MODULES, EDGES) == []


def test_the_checker_sees_imports_inside_functions():
    # a solver-floor module importing compress inside a function is an arrow up
    fake = ARCH.SRC / "approx" / "probe.py"
    source = "import numpy\n\ndef f():\n    from ..compression import compress\n    return compress\n"
    found = ARCH.imports(fake, MODULES, source=source)
    assert [(line, target) for line, target, _ in found] == [(4, "compression")]
    assert ARCH.floor("compression") > ARCH.floor("approx.probe")


def test_the_checker_finds_a_circle():
    modules = {"a": None, "b": None, "c": None}
    assert ARCH.cycles(modules, {("a", "b"): [], ("b", "c"): [], ("c", "a"): []}) == [
        ["a", "b", "c"]]
    assert ARCH.cycles(modules, {("a", "b"): [], ("b", "c"): []}) == []


def test_approx_distributed_is_a_deprecated_alias_of_the_split_modules():
    import importlib
    import sys

    pytest.importorskip("dask")
    sys.modules.pop("sparsekm.approx.distributed", None)
    with pytest.warns(DeprecationWarning, match="dask_cluster"):
        old = importlib.import_module("sparsekm.approx.distributed")
    from sparsekm.approx import dask_cluster, gamma_distributed, greedy_distributed

    assert old.get_client is dask_cluster.get_client
    assert old.greedy_basis_distributed is greedy_distributed.greedy_basis_distributed
    assert old.approx_kfd_distributed is gamma_distributed.approx_kfd_distributed


def test_the_function_compress_no_longer_shadows_its_package():
    """``sparsekm.compress`` is the function, its package :mod:`sparsekm.compression`;
    the old module path forwards names with a DeprecationWarning and importing it never
    replaces the function (the review's finding: tests had to reach the module with
    ``importlib.import_module``)."""
    import importlib

    import sparsekm.compress  # noqa: F401  (the alias: must not rebind sparsekm.compress)

    import sparsekm
    from sparsekm import compression

    assert callable(sparsekm.compress) and sparsekm.compress is compression.compress
    assert importlib.import_module("sparsekm.compression") is compression
    assert not (SRC / "compress").exists() and not (SRC / "compress.py").exists()
    with pytest.warns(DeprecationWarning, match="sparsekm.compression"):
        from sparsekm.compress import CompressReport
    assert CompressReport is compression.CompressReport
    assert callable(sparsekm.compress)
