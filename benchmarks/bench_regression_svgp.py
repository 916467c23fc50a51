"""The sparse variational GP peer of ``bench_regression.py`` (issue 36), with GPyTorch.

Optional benchmark dependency: GPyTorch (and torch); not part of sparsekm. Same data,
split and standardisation as ``bench_regression.py``, same budgets (inducing points =
kernel evaluations per prediction). The model is GPyTorch's SVGP (Hensman et al. 2013):
``ScaleKernel(RBFKernel)`` with a constant mean, a Gaussian likelihood, inducing points
initialised at k-means centres of the training rows and learned, all hyperparameters
learned by maximising the ELBO with Adam (lr 0.01, float64; full batch up to
``BATCH`` training rows, else minibatches of ``BATCH`` rows drawn without replacement
epoch by epoch, the ELBO scaled to all rows as usual). The number of Adam steps is
chosen on the validation rows among the checkpoints ``STEPS`` (nothing is chosen on the
test rows); test RMSE ± a bootstrap SE as there.

``--large`` runs the sets of ``bench_regression_large.py`` instead (diamonds, friedman1
at 10^5 rows; its split, all training rows, budgets the fractions of its ``--fit-rows``)
and ``--merge`` adds the SVGP rows to that benchmark's JSON as the ``svgp`` peer of each
cell, its targets recomputed with the SVGP among the peers.

Usage: ``python benchmarks/bench_regression_svgp.py [--quick] [--large] [--merge] [--out F]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import write_results  # noqa: E402
from bench_regression import BUDGETS, _datasets, _environment, _rmse_se, _split  # noqa: E402

STEPS = (250, 500, 1000, 2000)
BATCH = 1024
OUT = Path(__file__).resolve().parent / "results" / "regression_svgp.json"
OUT_LARGE = Path(__file__).resolve().parent / "results" / "regression_svgp_large.json"


def svgp(Xtr, ytr, Xva, yva, Xte, m, steps, seed=0, batch=BATCH):
    """Fit SVGP with ``m`` inducing points; (test predictions of the validation-best
    checkpoint, chosen steps, validation RMSE per checkpoint, seconds)."""
    import gpytorch
    import torch
    from sklearn.cluster import KMeans

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(seed)
    T = {k: torch.as_tensor(v, dtype=torch.float64, device=dev)
         for k, v in (("Xtr", Xtr), ("ytr", ytr), ("Xva", Xva), ("Xte", Xte))}
    Z0 = KMeans(n_clusters=m, n_init=1, random_state=seed).fit(Xtr).cluster_centers_

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self, Z):
            vd = gpytorch.variational.CholeskyVariationalDistribution(Z.size(0))
            vs = gpytorch.variational.VariationalStrategy(self, Z, vd,
                                                          learn_inducing_locations=True)
            super().__init__(vs)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x),
                                                             self.covar_module(x))

    t0 = time.perf_counter()
    model = SVGP(torch.as_tensor(Z0, dtype=torch.float64, device=dev)).to(dev).double()
    lik = gpytorch.likelihoods.GaussianLikelihood().to(dev).double()
    model.train()
    lik.train()
    opt = torch.optim.Adam([*model.parameters(), *lik.parameters()], lr=0.01)
    mll = gpytorch.mlls.VariationalELBO(lik, model, num_data=Xtr.shape[0])
    val_rmse, test_pred, done = {}, {}, 0
    n = Xtr.shape[0]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    order, pos = torch.randperm(n, generator=gen), 0
    for target in steps:
        for _ in range(target - done):
            if n <= batch:
                xb, yb = T["Xtr"], T["ytr"]
            else:  # minibatches without replacement, a fresh permutation each epoch
                if pos + batch > n:
                    order, pos = torch.randperm(n, generator=gen), 0
                idx = order[pos:pos + batch].to(dev)
                pos += batch
                xb, yb = T["Xtr"][idx], T["ytr"][idx]
            opt.zero_grad()
            loss = -mll(model(xb), yb)
            loss.backward()
            opt.step()
        done = target
        model.eval()
        with torch.no_grad():
            pv = _mean(model, T["Xva"])
            test_pred[target] = _mean(model, T["Xte"])
        model.train()
        val_rmse[target] = float(np.sqrt(np.mean((pv - yva) ** 2)))
    seconds = time.perf_counter() - t0
    best = min(val_rmse, key=val_rmse.get)
    return test_pred[best], best, val_rmse, seconds


def _mean(model, X, rows=4096):
    """The predictive mean in row blocks (the test sets have up to 20,000 rows)."""
    return np.concatenate([model(X[i:i + rows]).mean.cpu().numpy()
                           for i in range(0, X.shape[0], rows)])


def _sets(args):
    """``(key, name, X, y, n_for_budgets)``: the small sets, or the large ones."""
    if not args.large:
        n = args.friedman_n or (600 if args.quick else 5000)
        for name, X, y in _datasets(n):
            yield name.split()[0], name, X, y, None
        return
    from bench_regression_large import SETS, MissingData, load

    for key in args.sets or SETS:
        try:
            name, X, y, _ = load(key, args.quick)
        except MissingData as exc:
            print(exc, flush=True)
            continue
        yield key, name, X, y, args.fit_rows


def merge(svgp_json, target_json):
    """Add the SVGP rows to a results file's cells as the ``svgp`` peer; recompute targets.

    ``target_json``: ``regression_large.json`` (sets keyed by name, budgets by fraction)
    or ``regression.json`` (lists); a cell takes the SVGP row of its set and budget when
    the inducing points equal its ``n_vectors``.
    """
    import json

    from bench_regression_large import targets

    sv = json.loads(Path(svgp_json).read_text())
    res = json.loads(Path(target_json).read_text())
    sets = res["datasets"]
    if isinstance(sets, list):  # regression.json
        sets = {d["name"].split()[0]: d for d in sets}
    for d in sv.get("datasets_partial") or sv["datasets"]:  # a cut-off run: its rows so far
        cell_set = sets.get(d.get("key", d["name"].split()[0]))
        if cell_set is None:
            continue
        for r in d["svgp"]:
            for m in cell_set["models"].values():
                rows = m["budgets"]
                rows = rows.values() if isinstance(rows, dict) else rows
                for row in rows:
                    if (row["n_vectors"] == r["n_vectors"]
                            and abs(row["budget_fraction"] - r["budget_fraction"]) < 1e-12):
                        row["svgp"] = {k: r[k] for k in ("rmse", "se", "seconds",
                                                         "steps_chosen")}
                        for k in [k for k in row if k.startswith("target_")]:
                            del row[k]  # superseded by row["targets"], SVGP among the peers
                        targets(row, m["test_rmse"])
    res.pop("svgp_source", None)
    res.setdefault("svgp_sources", {})[Path(svgp_json).name] = sv["environment"]
    res["svgp"] = (f"merged from {', '.join(sorted(res['svgp_sources']))} (GPyTorch, "
                   "optional extra)")
    write_results(target_json, res)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--friedman-n", type=int, default=None)
    p.add_argument("--large", action="store_true", help="the sets of bench_regression_large")
    p.add_argument("--sets", default=None, help="with --large: a comma-separated subset")
    p.add_argument("--fit-rows", type=int, default=10_000, help="as bench_regression_large's")
    p.add_argument("--budgets", default=",".join(str(b) for b in BUDGETS))
    p.add_argument("--merge", default=None, help="results JSON to add the SVGP rows to")
    p.add_argument("--merge-only", action="store_true", help="merge --out into --merge, no run")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    args.out = args.out or str(OUT_LARGE if args.large else OUT)
    args.sets = [k for k in args.sets.split(",") if k] if args.sets else None
    if args.merge_only:  # no run: the SVGP rows already in --out
        merge(args.out, args.merge)
        print(f"merged {args.out} into {args.merge}")
        return 0
    import gpytorch
    import torch

    torch.set_num_threads(int(__import__("os").environ.get("OMP_NUM_THREADS", "1")))
    steps = STEPS[:1] if args.quick else STEPS
    budgets = [float(b) for b in args.budgets.split(",") if b]
    res = {"environment": {**_environment(), "torch": torch.__version__,
                           "gpytorch": gpytorch.__version__,
                           "device": torch.cuda.get_device_name(0)
                           if torch.cuda.is_available() else "cpu"},
           "steps_checkpoints": list(steps), "batch_rows": BATCH, "adam_lr": 0.01,
           "datasets": []}
    for key, name, X, y, n_budget in _sets(args):
        (Xtr, ytr, Xva, yva, Xte, yte), scale = _split(X, y)
        rows = []
        for frac in budgets:
            base = Xtr.shape[0] if n_budget is None else min(n_budget, Xtr.shape[0])
            m = max(2, int(round(frac * base)))
            pred, best, val, sec = svgp(Xtr, ytr, Xva, yva, Xte, m, steps)
            rmse, se = _rmse_se(pred, yte, scale)
            rows.append({"budget_fraction": frac, "n_vectors": m, "rmse": rmse, "se": se,
                         "steps_chosen": best, "val_rmse_by_steps": {str(k): v * scale for
                                                                     k, v in val.items()},
                         "seconds": sec})
            print(f"{name} SVGP m={m}: {rmse:.4g} ± {se:.2g} (steps {best}, {sec:.1f} s)",
                  flush=True)
            res["datasets_partial"] = res["datasets"] + [{"key": key, "name": name,
                                                          "svgp": rows}]
            write_results(args.out, res)  # budget by budget: a cut-off run keeps its rows
        res["datasets"].append({"key": key, "name": name, "svgp": rows})
        res.pop("datasets_partial", None)
    write_results(args.out, res)
    print(f"wrote {args.out}")
    if args.merge:
        merge(args.out, args.merge)
        print(f"merged into {args.merge}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
