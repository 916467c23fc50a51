"""The sparse variational GP peer of ``bench_regression.py`` (issue 36), with GPyTorch.

Optional benchmark dependency: GPyTorch (and torch); not part of sparsekm. Same data,
split and standardisation as ``bench_regression.py``, same budgets (inducing points =
kernel evaluations per prediction). The model is GPyTorch's SVGP (Hensman et al. 2013):
``ScaleKernel(RBFKernel)`` with a constant mean, a Gaussian likelihood, inducing points
initialised at k-means centres of the training rows and learned, all hyperparameters
learned by maximising the ELBO with Adam (lr 0.01, full batch, float64). The number of
Adam steps is chosen on the validation rows among the checkpoints
``STEPS`` (nothing is chosen on the test rows); test RMSE ± a bootstrap SE as there.

Usage: ``python benchmarks/bench_regression_svgp.py [--quick] [--out F]``.
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
OUT = Path(__file__).resolve().parent / "results" / "regression_svgp.json"


def svgp(Xtr, ytr, Xva, yva, Xte, m, steps, seed=0):
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
    for target in steps:
        for _ in range(target - done):
            opt.zero_grad()
            loss = -mll(model(T["Xtr"]), T["ytr"])
            loss.backward()
            opt.step()
        done = target
        model.eval()
        with torch.no_grad():
            pv = model(T["Xva"]).mean.cpu().numpy()
            test_pred[target] = model(T["Xte"]).mean.cpu().numpy()
        model.train()
        val_rmse[target] = float(np.sqrt(np.mean((pv - yva) ** 2)))
    seconds = time.perf_counter() - t0
    best = min(val_rmse, key=val_rmse.get)
    return test_pred[best], best, val_rmse, seconds


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--friedman-n", type=int, default=None)
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    import gpytorch
    import torch

    n = args.friedman_n or (600 if args.quick else 5000)
    steps = STEPS[:1] if args.quick else STEPS
    res = {"environment": {**_environment(), "torch": torch.__version__,
                           "gpytorch": gpytorch.__version__,
                           "device": torch.cuda.get_device_name(0)
                           if torch.cuda.is_available() else "cpu"},
           "steps_checkpoints": list(steps), "datasets": []}
    for name, X, y in _datasets(n):
        (Xtr, ytr, Xva, yva, Xte, yte), scale = _split(X, y)
        rows = []
        for frac in BUDGETS:
            m = max(2, int(round(frac * Xtr.shape[0])))
            pred, best, val, sec = svgp(Xtr, ytr, Xva, yva, Xte, m, steps)
            rmse, se = _rmse_se(pred, yte, scale)
            rows.append({"budget_fraction": frac, "n_vectors": m, "rmse": rmse, "se": se,
                         "steps_chosen": best, "val_rmse_by_steps": {str(k): v * scale for
                                                                     k, v in val.items()},
                         "seconds": sec})
            print(f"{name} SVGP m={m}: {rmse:.4g} ± {se:.2g} (steps {best}, {sec:.1f} s)",
                  flush=True)
        res["datasets"].append({"name": name, "svgp": rows})
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_results(args.out, res)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
