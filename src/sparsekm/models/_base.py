"""Shared pieces of the training-set-approximation classifiers (Franc & Hlaváč)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ..approx.greedy import resolve_n_basis
from ..parallel import dask_rowwise
from ..persistence import spec
from ..utils.validation import check_label_types, check_labels, validate_X

__all__ = ["BinaryExpansionClassifier", "resolve_n_basis", "binary_targets", "BINARY_PERSIST_ATTRS"]

# Fitted state of a binary expansion classifier restored by sparsekm.load (docs/persistence.md).
BINARY_PERSIST_ATTRS = {
    "classes_": spec.array("biufU", (2,)),
    "kernel_": spec.kernel(),
    "coef_": spec.array("f", ("n_terms",)),
    "intercept_": spec.float(),
    "expansion_": spec.expansion(n_terms="n_terms", n_features="n_features", n_outputs=1),
    "n_features_in_": spec.int(bind="n_features"),
    "n_kernel_evaluations_": spec.dict(spec.int(nullable=True), keys=("approximation", "training")),
}


def binary_targets(y, owner, n_samples):
    """Classes and ±1 labels (``classes_[1]`` is the positive class)."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None.")
    check_label_types(y, owner)
    y = check_labels(column_or_1d(y, warn=True), n_samples)
    check_classification_targets(y)
    classes, y_idx = np.unique(y, return_inverse=True)
    if classes.size != 2:
        raise ValueError(f"Only binary classification is supported by {owner}; y has "
                         f"{classes.size} class(es) {classes.tolist()[:5]}. Use "
                         f"sklearn.multiclass.OneVsRestClassifier for more classes.")
    return classes, np.where(y_idx == 1, 1.0, -1.0)


class BinaryExpansionClassifier(ClassifierMixin, BaseEstimator):
    """Binary classifier whose decision function is the KernelExpansion ``expansion_``."""

    def _check_predict_input(self, X):
        check_is_fitted(self, "expansion_")
        return validate_X(self, X, reset=False)

    @dask_rowwise
    def decision_function(self, X):
        """``f(x) = sum_j coef_j k(x, z_j) + intercept``; positive means ``classes_[1]``.

        A ``dask.array`` gives a dask array (see :mod:`sparsekm.parallel`).
        """
        X = self._check_predict_input(X)
        return self.expansion_.decision_function(X)

    @dask_rowwise
    def predict(self, X):
        """Class labels ``classes_[f(x) > 0]``; a dask array for a dask ``X``."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]

    def _set_distributed_fit(self, fit):
        """Take the fitted state of a dask fit
        (:class:`~sparsekm.approx.dask_fits.DistributedFit`); returns ``self``."""
        self.classes_, self.kernel_, self.basis_ = fit.classes, fit.kernel, fit.basis
        self.coef_, self.intercept_, self.expansion_ = fit.coef, fit.intercept, fit.expansion
        self.n_features_in_ = fit.expansion.n_features
        self.n_kernel_evaluations_ = fit.n_kernel_evaluations
        if fit.n_iter is not None:
            self.n_iter_ = fit.n_iter
        if fit.dask_info is not None:
            self.dask_info_ = fit.dask_info
        return self

    @property
    def n_vectors_(self):
        """Number of kernel evaluations per prediction (terms of ``expansion_``)."""
        check_is_fitted(self, "expansion_")
        return self.expansion_.n_terms

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
