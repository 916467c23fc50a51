"""Kernel PCA denoising experiments of *Input space vs. feature space* (section VI-A).

* ``toy-clusters``: figures 4-6 (three point sources in the plane);
* ``table-denoise-gaussians``: Table I (eleven Gaussians in R^10);
* ``usps-denoise``: figures 9 and 10 (USPS digits with Gaussian and speckle noise);
* ``half-circle-square``: figure 7 (2-D denoising of a half circle and a square).

All use the Gaussian kernel and the fixed-point pre-image iteration (eq. 50)
started from the noisy point, as in the paper; linear PCA is the baseline
everywhere. Kernel widths follow the paper's parameterisation
``exp(-||x - y||^2 / c)`` (``RBF(gamma=1/c)``).
"""

from __future__ import annotations

import numpy as np

from ..kernels import RBF
from ..models.kernel_pca import KernelPCA, linear_pca_denoise
from ..utils.progress import progress
from . import Result, Section, Target, published_cell, register

SECTION = Section(
    title="Pre-images and kernel PCA denoising (issue 3)",
    order=3,
    intro="""\
*Input space vs. feature space in kernel-based methods* (Schölkopf et al., IEEE TNN 1999),
section VI-A: kernel PCA denoising by projection onto the first n components and a
pre-image by the fixed-point iteration (eq. 50) started from the noisy point, against
linear PCA. Gaussian kernel `exp(-||x - y||^2 / c)` throughout. Commands:
`sparsekm reproduce toy-clusters table-denoise-gaussians half-circle-square usps-denoise`
(`usps-denoise` needs the USPS files: download them with `sparsekm data fetch usps`, then
pass `--data DIR` or set `SPARSEKM_DATA=DIR` if they are not in the default data folder).""",
    outro="""\
**About the USPS gap.** Our kernel PCA error keeps falling up to n = 2048 (paper: optimum
at 512), and our linear PCA optimum is n = 64 (paper: 32). The paper states that the
kernel width 0.5 equals twice the average per-pixel variance of its data (variance 0.25);
the ESL copy of USPS we use (pixels in [-1, 1], 59 % exactly -1) has average per-pixel
variance 0.47, so the same noise sigma = 0.5 is relatively weaker here. Rescaling our data
to variance 0.25 moves the linear optimum to n = 32, as in the paper, but the ratio stays
near 1.4 (1.38 at n = 512, 1.40 at n = 1024; exploratory run, not in the CLI). Clipping
the noisy digits to [-1, 1] gives 1.29 (Gaussian). Restarting the pre-image iteration
from the best training point instead of the noisy digit converges to the same pre-images
(changes in MSE < 1e-4), so the gap is not due to the optimiser. Using all 2999 non-zero
components (Gaussian noise, centred) gives MSE 18.25, ratio 1.47: the kernel PCA error has
levelled off. Clipping both methods' outputs to [-1, 1] helps linear PCA far more (best
19.26 against kernel PCA's 18.17, ratio 1.06). (Both exploratory runs, seed 0, not in the
CLI.) The paper's fig. 10 numbers are not given, so we cannot locate the difference
further.""",
    table_notes=lambda records: _denoise_table_notes(records),
)

# Tolerance of the fixed-point iteration in the experiments: ||dz|| <= tol (1 + ||z||).
_TOL = 1e-6


def _msd(Z, T):
    """Mean over points of the squared Euclidean distance."""
    return float(np.mean(np.sum((np.asarray(Z) - np.asarray(T)) ** 2, axis=1)))


# -- toy clusters (fig. 4-6) ---------------------------------------------------------------

_SOURCES = np.array([[-0.5, -0.1], [0.0, 0.7], [0.5, 0.1]])


@register("toy-clusters", "kernel PCA toy example: component contours and denoising (figs. 4-6)")
def toy_clusters(ctx):
    from ..plotting import plot_component_contours, plot_denoising_2d

    rng = np.random.default_rng(ctx.seed)
    sigma = 0.1
    X = np.repeat(_SOURCES, 100, axis=0) + sigma * rng.normal(size=(300, 2))
    labels = np.repeat(np.arange(3), 20)
    T = _SOURCES[labels] + sigma * rng.normal(size=(60, 2))
    kpca = KernelPCA(n_components=8, kernel=RBF(gamma=1 / 0.1), eigen_solver="dense",
                     random_state=ctx.seed).fit(X)
    truth = _SOURCES[labels]
    rows, panels = [], [("test data", T, None)]
    for n in progress(range(1, 9), desc="toy-clusters", disable=not ctx.progress):
        Z = kpca.denoise(T, n_components=n, tol=_TOL).z
        panels.append((f"kernel PCA, n = {n}", T, Z))
        rows.append((n, _msd(Z, truth)))
    Zlin = linear_pca_denoise(X, T, 1)
    figs = [
        plot_component_contours(kpca, X, path=ctx.out_dir / "toy_clusters_components.png"),
        plot_denoising_2d(panels, reference=_SOURCES, lines=True,
                          path=ctx.out_dir / "toy_clusters_denoising.png"),
        plot_denoising_2d([("linear PCA, n = 1", T, Zlin)], ncols=1, reference=_SOURCES,
                          path=ctx.out_dir / "toy_clusters_linear_pca.png"),
    ]
    table = ["| n | kernel PCA: mean sq. distance to source | linear PCA (n = 1) | noisy test points |",
             "|---|---|---|---|"]
    noisy, lin = _msd(T, truth), _msd(Zlin, truth)
    for n, err in rows:
        table.append(f"| {n} | {err:.4f} | {lin:.4f} | {noisy:.4f} |")
    return Result(
        name="toy-clusters",
        title="Kernel PCA toy example, figs. 4-6 (three sources, sigma = 0.1, c = 0.1)",
        table="\n".join(table),
        notes=[
            "Paper: qualitative only. Components 1-2 separate the clusters, 3-5 split them, "
            "6-8 split them again (fig. 4); with small n, clusters shrink to points (fig. 5), "
            "whereas linear PCA (n = 1) moves points onto a line (fig. 6).",
            f"Ours: 300 training / 60 test points, seed {ctx.seed}; pre-images by the "
            "fixed-point iteration (eq. 50) from the noisy point.",
            f"Noise-free reference: the expected squared distance of a noisy point to its "
            f"source is 2 sigma^2 = {2 * sigma**2:.3f}.",
        ],
        figures=figs,
    )


# -- Table I: eleven Gaussians in R^10 -----------------------------------------------------

_TABLE1 = {
    0.05: [2058.42, 1238.36, 846.14, 565.41, 309.64, 170.36, 125.97, 104.40, 92.23],
    0.1: [10.22, 31.32, 21.51, 29.24, 27.66, 23.53, 29.64, 40.07, 63.41],
    0.2: [0.99, 1.12, 1.18, 1.50, 2.11, 2.73, 3.72, 5.09, 6.32],
    0.4: [1.07, 1.26, 1.44, 1.64, 1.91, 2.08, 2.22, 2.34, 2.47],
    0.8: [1.23, 1.39, 1.54, 1.70, 1.80, 1.96, 2.10, 2.25, 2.39],
}


TABLE_I = "Schölkopf et al. 1999, Table I"


def _denoise_table_notes(records):
    """Scoreboard evidence for Table I (denoising ratios; higher is better)."""
    rec = records.get("table-denoise-gaussians")
    if rec is None or "wins" not in rec.data:
        return {}
    return {TABLE_I: (
        "The centres and the noise are a random draw (the paper's draw is not published), and "
        "a ratio is linear PCA's error over kernel PCA's: at small sigma both errors are tiny "
        "and the ratio follows linear PCA's error, so single cells vary most there. Measured: "
        f"kernel PCA better in {rec.data['wins']} of {rec.data.get('n_cells', 45)} cells (the "
        "paper: 44 of 45).")}


def table_denoise_ratios(sigmas, ns, *, seed=0, n_train=100, n_test=33, n_sources=11,
                         dim=10, show_progress=False):
    """Linear-to-kernel PCA ratio of the mean squared distance to the true centre.

    Returns ``ratios[sigma_index, n_index]`` plus both error tables.
    """
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-1.0, 1.0, size=(n_sources, dim))
    ratios = np.zeros((len(sigmas), len(ns)))
    err_k = np.zeros_like(ratios)
    err_l = np.zeros_like(ratios)
    bar = progress(total=len(sigmas) * len(ns), desc="table-denoise-gaussians",
                   disable=not show_progress)
    for i, sigma in enumerate(sigmas):
        X = np.repeat(centres, n_train, axis=0) + sigma * rng.normal(size=(n_sources * n_train, dim))
        lab = np.repeat(np.arange(n_sources), n_test)
        T = centres[lab] + sigma * rng.normal(size=(n_sources * n_test, dim))
        # sigma is also the kernel width: exp(-||x - y||^2 / (2 sigma^2))
        kpca = KernelPCA(n_components=max(ns), kernel=RBF.from_sigma(sigma), eigen_solver="dense",
                         random_state=seed).fit(X)
        lins = linear_pca_denoise(X, T, list(ns))
        for j, n in enumerate(ns):
            Z = kpca.denoise(T, n_components=n, tol=_TOL).z
            err_k[i, j] = _msd(Z, centres[lab])
            err_l[i, j] = _msd(lins[j], centres[lab])
            ratios[i, j] = err_l[i, j] / err_k[i, j]
            bar.update()
    bar.close()
    return ratios, err_k, err_l


@register("table-denoise-gaussians", "Table I: kernel vs linear PCA denoising of 11 Gaussians in R^10")
def table_denoise_gaussians(ctx):
    sigmas = [0.05, 0.1, 0.2, 0.4, 0.8]
    ns = list(range(1, 10))
    n_train, n_test = (40, 15) if ctx.quick else (100, 33)
    ratios, err_k, err_l = table_denoise_ratios(sigmas, ns, seed=ctx.seed, n_train=n_train,
                                                n_test=n_test, show_progress=ctx.progress)
    head = "| sigma | " + " | ".join(f"n={n}" for n in ns) + " |"
    lines = [head, "|---" * (len(ns) + 1) + "|"]
    for i, s in enumerate(sigmas):
        cells = [f"{ratios[i, j]:.2f} ({_TABLE1[s][j]:.2f})" for j in range(len(ns))]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    wins = int(np.sum(ratios > 1))
    paper_wins = int(sum(v > 1 for row in _TABLE1.values() for v in row))
    cells = [published_cell(TABLE_I, f"sigma = {s}, n = {n} ratio", round(float(ratios[i, j]), 2),
                            _TABLE1[s][j], higher_is_better=True)
             for i, s in enumerate(sigmas) for j, n in enumerate(ns)]
    return Result(
        targets=[Target("Table I: ratio > 1 in >= 40 of 45 cells",
                        f"{wins} of {ratios.size}", f"{paper_wins} of 45",
                        wins >= 40 and ratios.size == 45)],
        data={"wins": wins, "n_cells": int(ratios.size), "cells": cells},
        name="table-denoise-gaussians",
        title="Table I: denoising Gaussians in R^10, ratio linear PCA / kernel PCA "
              "(ours (paper))",
        table="\n".join(lines),
        notes=[
            f"Kernel PCA better (ratio > 1) in {wins} of {ratios.size} cells "
            f"(paper: {paper_wins} of 45; target >= 40).",
            "Robustness (other seeds, same command with `--seed`; recorded once): 43 of 45 "
            "(seed 1) and 42 of 45 (seed 2); the cells below 1 are always sigma = 0.8 with "
            "n <= 3 (ratios 0.86-0.96), where the clusters overlap and the paper also has its "
            "smallest ratios.",
            f"{n_train} training / {n_test} test points per source, centres uniform in "
            f"[-1, 1]^10 (seed {ctx.seed}), kernel exp(-||x-y||^2 / (2 sigma^2)); "
            "mean squared distance of the denoised test points to their true centre.",
            "Centres and noise are random, so individual cells differ from the paper's draw; "
            "the largest ratios (small sigma, small n) are dominated by linear PCA's error "
            "and vary the most.",
        ],
    )


# -- USPS (fig. 9/10) ------------------------------------------------------------------------


def _usps_subsets(ctx, per_digit_train, per_digit_test):
    from ..datasets import load_usps

    Xtr, ytr, Xte, yte = load_usps(ctx.data_path)
    rng = np.random.default_rng(ctx.seed)
    tr = np.concatenate([rng.choice(np.flatnonzero(ytr == d), per_digit_train, replace=False)
                         for d in range(10)])
    te = np.concatenate([rng.choice(np.flatnonzero(yte == d), per_digit_test, replace=False)
                         for d in range(10)])
    return Xtr[tr], Xte[te], yte[te], rng


def _usps_validation(ctx, X, per_digit):
    """Validation digits from the USPS *training* file, disjoint from the training subset ``X``.

    Used to choose the number of components n without the test set (our extra rows of
    ``usps-denoise``); the noise is drawn from its own generator, so the test digits and
    their noise are the same as without validation.
    """
    from ..datasets import load_usps

    Xtr, ytr, _, _ = load_usps(ctx.data_path)
    used = {r.tobytes() for r in np.asarray(X)}
    rng = np.random.default_rng([ctx.seed, 1])
    va = []
    for d in range(10):
        idx = [i for i in np.flatnonzero(ytr == d) if Xtr[i].tobytes() not in used]
        va.append(rng.choice(idx, per_digit, replace=False))
    return Xtr[np.concatenate(va)], rng


def add_gaussian_noise(X, sigma, rng):
    """Additive Gaussian noise with standard deviation ``sigma`` (not clipped)."""
    return X + sigma * rng.normal(size=X.shape)


def add_speckle_noise(X, p, rng):
    """Each pixel is set to black or white (-1 or +1, equally likely) with probability ``p``."""
    flip = rng.uniform(size=X.shape) < p
    return np.where(flip, rng.choice([-1.0, 1.0], size=X.shape), X)


@register("usps-denoise", "USPS denoising, kernel vs linear PCA (figs. 8-10)", slow=True)
def usps_denoise(ctx):
    from ..plotting import image_grid, plot_error_curves

    per_train, per_test = (100, 10) if ctx.quick else (300, 50)
    X, T, _, rng = _usps_subsets(ctx, per_train, per_test)
    noisy = {"Gaussian (sigma = 0.5)": add_gaussian_noise(T, 0.5, rng),
             "speckle (p = 0.2)": add_speckle_noise(T, 0.2, rng)}
    # validation digits (training file, not in X) with their own noise: n chosen on them
    V, vrng = _usps_validation(ctx, X, per_test)
    noisy_val = {"Gaussian (sigma = 0.5)": add_gaussian_noise(V, 0.5, vrng),
                 "speckle (p = 0.2)": add_speckle_noise(V, 0.2, vrng)}
    max_n = X.shape[0] - 1
    ns_kernel = [n for n in [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048] if n <= max_n]
    ns_linear = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    kernel = RBF(gamma=1 / 128.0)
    # The paper's kernel PCA is centred (footnote 9); the uncentred variant is an ablation.
    models = {"centred": KernelPCA(n_components=max(ns_kernel), kernel=kernel,
                                   eigen_solver="dense", random_state=ctx.seed).fit(X),
              "uncentred": KernelPCA(n_components=max(ns_kernel), kernel=kernel, center=False,
                                     eigen_solver="dense", random_state=ctx.seed).fit(X)}
    kpca = models["centred"]
    lin_results, k_results, shown, noisy_err = {}, {}, {}, {}
    lin_val, k_val = {}, {}  # validation MSE by n (chooses n without the test set)
    show_ns = [1, 4, 16, 64, 256]
    first = np.arange(10) * per_test  # first test example of each digit
    bar = progress(total=len(noisy) * len(ns_kernel) * 2 * len(models), desc="usps-denoise",
                   disable=not ctx.progress)
    for name, N in noisy.items():
        lins = linear_pca_denoise(X, N, ns_linear)
        lin_results[name] = [_msd(L, T) for L in lins]
        lin_val[name] = [_msd(L, V) for L in linear_pca_denoise(X, noisy_val[name], ns_linear)]
        for variant, model in models.items():  # both variants on the validation digits
            k_val[name, variant] = []
            for n in ns_kernel:
                k_val[name, variant].append(_msd(model.denoise(
                    noisy_val[name], n_components=n, tol=_TOL).z, V))
                bar.update()
        noisy_err[name] = _msd(N, T)
        rows = [T[first], N[first]] + [lins[ns_linear.index(n)][first] for n in show_ns]
        for variant, model in models.items():
            k_err, kern_rows = [], {}
            for n in ns_kernel:
                Z = model.denoise(N, n_components=n, tol=_TOL).z
                k_err.append(_msd(Z, T))
                if n in show_ns:
                    kern_rows[n] = Z[first]
                bar.update()
            k_results[name, variant] = k_err
            if variant == "centred":
                rows += [kern_rows[n] for n in show_ns]
        shown[name] = rows
    bar.close()

    figs = []
    curves, xs = {}, {}
    for name in noisy:
        curves[f"linear PCA, {name}"] = lin_results[name]
        xs[f"linear PCA, {name}"] = ns_linear
        for variant in models:
            label = f"kernel PCA ({variant}), {name}"
            curves[label] = k_results[name, variant]
            xs[label] = ns_kernel
    figs.append(plot_error_curves(xs, curves, ylabel="mean squared distance to clean digit",
                                  title="USPS denoising (fig. 10)",
                                  path=ctx.out_dir / "usps_denoise_mse.png"))
    # Fig. 9 layout: left half Gaussian, right half speckle; rows: clean, noisy,
    # linear n = 1, 4, 16, 64, 256, kernel n = 1, 4, 16, 64, 256.
    names = list(shown)
    images = []
    for r in range(len(shown[names[0]])):
        images += list(shown[names[0]][r]) + list(shown[names[1]][r])
    figs.append(image_grid(np.array(images), (16, 16), ncols=20,
                           row_labels=["clean", "noisy"]
                           + [f"linear PCA n={n}" for n in show_ns]
                           + [f"kernel PCA n={n}" for n in show_ns],
                           suptitle="USPS denoising (fig. 9): left ten columns Gaussian noise "
                                    "(sigma = 0.5), right ten speckle (p = 0.2)",
                           path=ctx.out_dir / "usps_denoise_digits.png"))

    # Fig. 8: eigenvectors 2^0..2^8 — linear PCA, pre-images of V^k, and Phi(e_i) . V^k.
    comps = [2**j - 1 for j in range(9) if 2**j <= kpca.n_components_]
    Xc = X - X.mean(axis=0)
    lin_axes = np.linalg.svd(Xc, full_matrices=False)[2][comps]
    pre = kpca.component_preimages(comps, n_init=3, tol=_TOL).z
    basis = kpca.transform(np.eye(X.shape[1]))[:, comps].T
    figs.append(image_grid(np.concatenate([lin_axes, pre, basis]), (16, 16), ncols=len(comps),
                           symmetric=True,
                           titles=[f"{k + 1}" for k in comps] * 3,
                           row_labels=["linear PCA", "pre-image of V^k", "Phi(e_i) . V^k"],
                           suptitle="Eigenvectors 1, 2, 4, ..., 256 (fig. 8)",
                           path=ctx.out_dir / "usps_eigenvectors.png"))

    paper_ratio = {"Gaussian (sigma = 0.5)": (1.6, 32, 512), "speckle (p = 0.2)": (1.2, 32, 256)}
    lines = ["| noise | kernel PCA; n chosen | noisy MSE | linear PCA (n) | kernel PCA (n) | "
             "ratio ours | ratio paper (n lin / n kernel) |", "|---|---|---|---|---|---|---|"]
    notes = [f"{per_train} training / {per_test} test digits per class (seed {ctx.seed}), "
             "k = exp(-||x-y||^2 / (0.5 * 256)), data as in the ESL files (pixels in [-1, 1]), "
             "noise not clipped; MSE = mean over test digits of the squared distance (sum over "
             "256 pixels) to the clean digit. Kernel PCA n up to "
             f"{max(ns_kernel)}, linear PCA n up to 256; pre-images by eq. 50 from the noisy "
             "digit.",
             "The paper compares the two methods \"for the optimal number of components in "
             "linear and kernel PCA\" (section VI-A), i.e. n chosen on the test digits: the rows "
             "marked \"the paper's protocol\" do the same. The rows \"n chosen on validation "
             f"digits\" choose n without the test set: on {per_test} other digits per class "
             "from the USPS training file (not among the training digits), with their own "
             "noise, then report the test MSE at that n."]
    best_ratio, val_ratio, chosen = {}, {}, {}
    for name in noisy:
        lin_err = lin_results[name]
        il = int(np.argmin(lin_err))
        pr, pnl, pnk = paper_ratio[name]
        # the paper's protocol (centred kernel PCA, n optimal on the test digits)
        k_err = k_results[name, "centred"]
        ik = int(np.argmin(k_err))
        ratio = lin_err[il] / k_err[ik]
        best_ratio[name, "centred"] = float(ratio)
        label = "centred (paper); n optimal on the test set (the paper's protocol)"
        lines.append(f"| {name} | {label} | {noisy_err[name]:.2f} | {lin_err[il]:.2f} "
                     f"({ns_linear[il]}) | {k_err[ik]:.2f} ({ns_kernel[ik]}) | {ratio:.2f} | "
                     f"{pr} ({pnl} / {pnk}) |")
        # n chosen on the validation digits (training file), test MSE at that n; the
        # uncentred ablation only this way (no test-set choice in an extra row)
        jl = int(np.argmin(lin_val[name]))
        for variant in models:
            k_err = k_results[name, variant]
            jk = int(np.argmin(k_val[name, variant]))
            ratio_v = lin_err[jl] / k_err[jk]
            val_ratio[name, variant] = float(ratio_v)
            chosen[name, variant] = {"linear": ns_linear[jl], "kernel": ns_kernel[jk]}
            vlabel = (f"{variant}{'' if variant == 'centred' else ' (ablation)'}; n chosen on "
                      "validation digits from the training file (extra)")
            lines.append(f"| {name} | {vlabel} | {noisy_err[name]:.2f} | {lin_err[jl]:.2f} "
                         f"({ns_linear[jl]}) | {k_err[jk]:.2f} ({ns_kernel[jk]}) | "
                         f"{ratio_v:.2f} | {pr} ({pnl} / {pnk}) |")
            same = [lin_err[ns_linear.index(n)] / k_err[ns_kernel.index(n)]
                    for n in ns_linear if n in ns_kernel]
            notes.append(f"{name}, kernel PCA ({variant}), test MSE by n: "
                         + ", ".join(f"{n}: {e:.2f}"
                                     for n, e in zip(ns_kernel, k_err, strict=True))
                         + f". Largest ratio at equal n: {max(same):.2f} (paper: up to 8).")
        notes.append(f"{name}, linear PCA MSE by n: "
                     + ", ".join(f"{n}: {e:.2f}" for n, e in zip(ns_linear, lin_err, strict=True))
                     + ".")
    targets = []
    for name, goal in (("Gaussian (sigma = 0.5)", 1.6), ("speckle (p = 0.2)", 1.2)):
        c = best_ratio[name, "centred"]
        targets.append(Target(
            f"USPS {name.split(' ')[0]} noise: ratio >= {goal} at the optimal n (the paper's "
            "protocol: n optimal on the test digits)",
            f"{c:.2f} (centred kernel PCA, the paper's formulation)",
            f"{paper_ratio[name][0]}", bool(c >= goal)))
        vc, vu = val_ratio[name, "centred"], val_ratio[name, "uncentred"]
        ch = chosen[name, "centred"]
        targets.append(Target(
            f"USPS {name.split(' ')[0]} noise: ratio >= {goal} with n chosen on validation "
            "digits (no test-set choice)",
            f"{vc:.2f} (n = {ch['linear']} linear / {ch['kernel']} kernel); {vu:.2f} "
            f"(uncentred ablation, n = {chosen[name, 'uncentred']['kernel']} kernel)",
            f"{paper_ratio[name][0]}", bool(vc >= goal)))
    data = {f"{n} / {v}": r for (n, v), r in best_ratio.items()}
    data.update({f"{n} / {v} / validation-chosen n": r for (n, v), r in val_ratio.items()})
    data["validation_chosen_n"] = {f"{n} / {v}": c for (n, v), c in chosen.items()}
    return Result(
        targets=targets,
        data=data,
        name="usps-denoise",
        title="USPS denoising, kernel vs linear PCA (figs. 8-10)",
        table="\n".join(lines),
        notes=notes,
        figures=figs,
    )


# -- half circle and square (fig. 7) ---------------------------------------------------------


def _half_circle(n, noise, rng):
    t = rng.uniform(0.0, np.pi, size=n)
    clean = np.c_[np.cos(t), np.sin(t)]
    return clean + noise * rng.normal(size=(n, 2))


def _square(n, noise, rng):
    s = rng.uniform(0.0, 8.0, size=n)  # perimeter of [-1, 1]^2
    side, u = np.floor(s).astype(int) // 2, (s % 2.0) - 1.0
    clean = np.select([side[:, None] == 0, side[:, None] == 1, side[:, None] == 2],
                      [np.c_[u, -np.ones(n)], np.c_[np.ones(n), u], np.c_[-u, np.ones(n)]],
                      np.c_[-np.ones(n), -u])
    return clean + noise * rng.normal(size=(n, 2))


def _curve_samples(name, m=2000):
    if name == "half circle":
        t = np.linspace(0.0, np.pi, m)
        return np.c_[np.cos(t), np.sin(t)]
    u = np.linspace(-1.0, 1.0, m // 4)
    one = np.ones_like(u)
    return np.concatenate([np.c_[u, -one], np.c_[one, u], np.c_[-u, one], np.c_[-one, -u]])


def _chamfer(Z, C):
    """Symmetric mean distance between point set ``Z`` and curve samples ``C``.

    Half the mean distance of the points to the curve plus half the mean distance of
    the curve to the points: small only if the points lie on the curve *and* cover it
    (collapsing everything onto a few points of the curve is penalised).
    """
    from scipy.spatial import cKDTree

    d_zc = cKDTree(C).query(Z)[0]
    d_cz = cKDTree(Z).query(C)[0]
    return 0.5 * float(d_zc.mean() + d_cz.mean())


@register("half-circle-square", "2-D denoising of a half circle and a square (fig. 7)")
def half_circle_square(ctx):
    from ..plotting import plot_denoising_2d

    rng = np.random.default_rng(ctx.seed)
    noise = 0.1
    n = 150 if ctx.quick else 300
    sets = {"half circle": _half_circle(n, noise, rng), "square": _square(n, noise, rng)}
    widths = [0.1, 0.25, 0.5, 1.0]
    n_comp = 4
    refs = {name: _curve_samples(name) for name in sets}
    panels, lines = [], ["| data | noisy | linear PCA (n = 1) | kernel PCA (n = 4) | c; how chosen |",
                         "|---|---|---|---|---|"]
    rule_c = {}
    for name, X in sets.items():
        C = refs[name]
        best = None
        for c in widths:
            kp = KernelPCA(n_components=n_comp, kernel=RBF(gamma=1.0 / c), eigen_solver="dense",
                           random_state=ctx.seed).fit(X)
            Z = kp.denoise(X, tol=_TOL).z
            err = _chamfer(Z, C)
            if best is None or err < best[0]:
                best = (err, c, Z)
        Zlin = linear_pca_denoise(X, X, 1)
        lines.append(f"| {name} | {_chamfer(X, C):.4f} | {_chamfer(Zlin, C):.4f} | "
                     f"{best[0]:.4f} | {best[1]}; best of {widths} by the distance to the "
                     "noise-free curve (the paper's protocol) |")
        # extra: c from the noisy data alone, by the paper's USPS rule ("The width 0.5 equals
        # twice the average of the data's variance in each dimension", section VI-A):
        # c = 2 * mean per-dimension variance * dimension. Never looks at the curve.
        c_rule = float(2.0 * X.var(axis=0).mean() * X.shape[1])
        rule_c[name] = c_rule
        kp = KernelPCA(n_components=n_comp, kernel=RBF(gamma=1.0 / c_rule), eigen_solver="dense",
                       random_state=ctx.seed).fit(X)
        lines.append(f"| {name} | {_chamfer(X, C):.4f} | {_chamfer(Zlin, C):.4f} | "
                     f"{_chamfer(kp.denoise(X, tol=_TOL).z, C):.4f} | {c_rule:.3f}; twice the "
                     "mean per-dimension variance of the noisy data times the dimension (the "
                     "paper's USPS rule; extra, no reference to the curve) |")
        panels += [(f"{name}: kernel PCA (n = 4, c = {best[1]})", X, best[2]),
                   (f"{name}: linear PCA (n = 1)", X, Zlin)]
    fig = plot_denoising_2d(panels[:2], ncols=2, reference=refs["half circle"], lines=False,
                            path=ctx.out_dir / "half_circle_denoising.png")
    fig2 = plot_denoising_2d(panels[2:], ncols=2, reference=refs["square"], lines=False,
                             path=ctx.out_dir / "square_denoising.png")
    return Result(
        name="half-circle-square",
        title="2-D denoising of a half circle and a square (fig. 7)",
        table="\n".join(lines),
        notes=[
            "Numbers: symmetric (Chamfer) distance between the denoised points and the "
            "noise-free curve: half the mean distance of the points to the curve plus half the "
            "mean distance of the curve to the points (lower is better; collapsing onto a few "
            "points is penalised).",
            "Paper: qualitative (fig. 7) — kernel PCA (four features) captures the circular and "
            "the closed square structure, linear PCA (one component) fails on both. The "
            "paper's data and kernel width are not given; ours: "
            f"{n} points, Gaussian noise 0.1, kernel exp(-||x-y||^2/c) with c picked from "
            f"{widths} by that distance: the paper's protocol (\"In all algorithms, parameter "
            "values were selected such that the best possible denoising result was obtained\", "
            "section VI-A), which uses the noise-free curve. The extra rows choose c without it, "
            "by the rule the paper states for its USPS kernel (\"The width 0.5 equals twice the "
            "average of the data's variance in each dimension\"): c = 2 x mean per-dimension "
            "variance x dimension, from the noisy points only.",
        ],
        figures=[fig, fig2],
    )
