"""``compress`` within a budget in bytes and microseconds per row (issue 37).

The budget becomes the largest ``n_vectors`` for each storage precision
(:func:`sparsekm.deploy.plan_budget`: the model in its deployed form, as
:mod:`sparsekm.c_export` writes it), the model is compressed to each distinct size, and
the (size, precision) pair with the lowest error on the validation data, with the
numbers as stored (:func:`sparsekm.c_export.deployed_model`), is returned (ties: fewer
bytes). The conversion and every precision's result go into the report's ``deploy_*``
entries.
"""

from __future__ import annotations

import numpy as np

from ..quantize import PRECISIONS


def compress_within_budget(compress, model, X_val, y_val, *, n_vectors, max_error_increase,
                           max_bytes, max_latency_us, latency_target, precision, **kw):
    """:func:`sparsekm.compress` with ``max_bytes``/``max_latency_us`` (see the module)."""
    from ..c_export import c_parts, deployed_model
    from ..deploy import plan_budget

    owner = "compress"
    if n_vectors is not None or max_error_increase is not None:
        raise ValueError(f"{owner}: a budget in bytes or microseconds (max_bytes, "
                         "max_latency_us) replaces n_vectors and max_error_increase; give one.")
    if X_val is None or y_val is None:
        raise ValueError(f"{owner}: with max_bytes or max_latency_us the storage precision is "
                         "picked on validation data: pass X_val and y_val.")
    precisions = PRECISIONS if precision is None else (
        (precision,) if isinstance(precision, str) else tuple(precision))
    parts = c_parts(model)
    if parts.head["kind"] == "scores":
        raise ValueError(f"{owner}: max_bytes/max_latency_us pick the precision on validation "
                         "error, for classifiers; for this model give n_vectors "
                         "(sparsekm.deploy.plan_budget converts bytes and microseconds to it).")
    exp = parts.expansion
    plan = plan_budget(exp.n_features, exp.n_outputs, parts.head["kind"], max_bytes=max_bytes,
                       max_latency_us=max_latency_us, precision=precisions,
                       latency_target=latency_target, n_scaler_steps=len(parts.steps),
                       class_labels=parts.classes, max_vectors=exp.n_terms)
    y_val = np.asarray(y_val)
    built, cand = {}, {}
    for p in precisions:
        n = plan[p]["n_vectors"]
        if n == 0:
            continue
        if n not in built:
            built[n] = compress(model, X_val, y_val, n_vectors=n, **kw)
        err = float(np.mean(deployed_model(built[n], p).predict(X_val) != y_val))
        cand[p] = (err, plan[p]["bytes"], n, plan[p]["latency_us"])
    if not cand:
        raise ValueError(f"{owner}: no storage precision fits one expansion vector within the "
                         "budget: " + "; ".join(plan["conversion"]))
    pick = min(cand, key=lambda p: (cand[p][0], cand[p][1]))
    err, nbytes, n, lat = cand[pick]
    out = built[n]
    out.compress_report_.update({
        "deploy_precision": pick, "deploy_n_vectors": int(n), "deploy_bytes": int(nbytes),
        "deploy_latency_us": float(lat), "deploy_latency_target": latency_target,
        "deploy_conversion": list(plan["conversion"]),
        "deploy_candidates": [f"{p}: {c[2]} vectors, {c[1]} B, {c[3]:.3g} us, validation "
                              f"error {100 * c[0]:.2f} %" for p, c in cand.items()]})
    return out
