"""Classifiers made of a :class:`~sparsekm.KernelExpansion` and a multi-class scheme.

A kernel classifier is an expansion (one output per binary machine) plus the rule
that turns its outputs into labels:

* ``"binary"``: one output ``f``; ``f > 0`` means ``classes[1]`` (scikit-learn's SVC);
* ``"ovr"``: one output per class (one-vs-rest); the label is the argmax;
* ``"ovo"``: one output per pair of classes ``(i, j)``, ``i < j``, in scikit-learn's
  order ``(0, 1), (0, 2), ..., (0, k-1), (1, 2), ...`` (``k(k-1)/2`` outputs), with
  libsvm's sign: ``f_ij > 0`` is a vote for class ``i``. The label is the class with
  the most votes (ties: the lowest class index, as libsvm).

For one-vs-one, scikit-learn's ``decision_function_shape="ovr"`` turns the pairwise
values into one column per class (:func:`ovr_decision_function`): the number of
votes plus the summed confidences squashed into ``(-1/3, 1/3)``, so the squashed
confidences only break ties between vote counts. :class:`ExpansionClassifier`
reproduces scikit-learn's ``decision_function`` and ``predict`` exactly for binary
and multi-class ``SVC``/``NuSVC`` (both shapes, ``break_ties``),
``OneVsRestClassifier(SVC)`` and ``OneVsOneClassifier(SVC)``.
"""

from __future__ import annotations

import functools

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import StrOptions

from . import persistence
from ._constraints import BOOLEAN
from .expansion import KernelExpansion
from .utils.hooks import Hook
from .utils.validation import check_array

__all__ = ["ExpansionClassifier", "ovo_pairs", "ovr_decision_function", "ovo_votes"]

_SCHEMES = ("binary", "ovr", "ovo")


def ovo_pairs(n_classes):
    """The class pairs ``(i, j)``, ``i < j``, of one-vs-one in scikit-learn's order.

    Returns
    -------
    i, j : ndarrays of shape (n_classes * (n_classes - 1) / 2,)
    """
    i, j = np.triu_indices(int(n_classes), k=1)
    return i, j


def _check_pairwise(dec, n_classes):
    dec = np.asarray(dec, dtype=np.float64)
    if dec.ndim == 1:
        dec = dec[:, None]
    n_pairs = n_classes * (n_classes - 1) // 2
    if dec.ndim != 2 or dec.shape[1] != n_pairs:
        raise ValueError(f"one-vs-one decision values for {n_classes} classes need "
                         f"{n_pairs} columns; got shape {dec.shape}.")
    return dec


def ovo_votes(dec, n_classes):
    """Votes of the pairwise machines: ``f_ij > 0`` votes for ``i``, else for ``j`` (libsvm).

    Parameters
    ----------
    dec : array-like of shape (n_samples, n_classes * (n_classes - 1) / 2)
        Pairwise decision values (libsvm's sign: positive means the first class).
    n_classes : int

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    dec = _check_pairwise(dec, n_classes)
    win_first, win_second = _pair_indicators(n_classes)
    first = dec > 0
    # whole counts: exact in any summation order
    return first @ win_first + (~first) @ win_second


@functools.lru_cache(maxsize=16)
def _pair_indicators(n_classes):
    """0/1 matrices (n_pairs, n_classes): pair p's first class, its second class."""
    i, j = ovo_pairs(n_classes)
    win_first = np.zeros((i.size, n_classes))
    win_second = np.zeros((i.size, n_classes))
    win_first[np.arange(i.size), i] = 1.0
    win_second[np.arange(i.size), j] = 1.0
    win_first.setflags(write=False)
    win_second.setflags(write=False)
    return win_first, win_second


def ovr_decision_function(dec, n_classes, *, second_wins=None):
    """scikit-learn's one-vs-one to one-column-per-class aggregation.

    ``votes + s / (3 (|s| + 1))`` where ``s_c`` sums the pairwise confidences for
    class ``c`` (``+f_ij`` for ``i``, ``-f_ij`` for ``j``) and each pair gives one
    vote (:func:`sklearn.multiclass._ovr_decision_function` with predictions
    ``f_ij < 0`` and confidences ``-f_ij``). The squashed term lies in
    ``(-1/3, 1/3)``: it only orders classes with equal vote counts.

    Parameters
    ----------
    dec : array-like of shape (n_samples, n_classes * (n_classes - 1) / 2)
        Pairwise decision values, positive for the first class of each pair.
    n_classes : int
    second_wins : array-like of bool, same shape as ``dec``, default=None
        Which pairs vote for their second class; default ``dec < 0`` (scikit-learn's
        SVC). ``OneVsOneClassifier`` counts ``dec <= 0`` (its binary ``predict``).

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    dec = _check_pairwise(dec, n_classes)
    second = dec < 0 if second_wins is None else np.asarray(second_wins, dtype=bool)
    i, j = ovo_pairs(n_classes)
    votes = np.zeros((dec.shape[0], n_classes))
    conf = np.zeros((dec.shape[0], n_classes))
    for p in range(i.size):
        conf[:, i[p]] += dec[:, p]
        conf[:, j[p]] -= dec[:, p]
        votes[:, i[p]] += ~second[:, p]
        votes[:, j[p]] += second[:, p]
    return votes + conf / (3 * (np.abs(conf) + 1))


#: The conversion of a fitted scikit-learn classifier to its exact
#: :class:`ExpansionClassifier`; :mod:`sparsekm.interop` (a floor above) registers
#: :func:`~sparsekm.interop.classifier_from_estimator` on it.
estimator_to_classifier = Hook("ExpansionClassifier.from_estimator", "sparsekm.interop")


@persistence.register
class ExpansionClassifier(ClassifierMixin, BaseEstimator):
    """A classifier: a kernel expansion, its class labels and a multi-class scheme.

    Built from a fitted scikit-learn model by :meth:`from_estimator` (exact: it
    reproduces the model's ``decision_function`` to rounding and its ``predict``),
    or around a (reduced) expansion. Saved and loaded by :func:`sparsekm.save` /
    :func:`sparsekm.load` without pickle.

    Parameters
    ----------
    expansion : KernelExpansion
        One output (``"binary"``), one per class (``"ovr"``) or one per pair of
        classes in scikit-learn's order (``"ovo"``, libsvm's sign: positive means
        the first class of the pair).
    classes : array-like of shape (n_classes,)
        Class labels, sorted as in the original model's ``classes_``.
    scheme : {"binary", "ovr", "ovo"}, default="ovo"
    decision_function_shape : {"ovr", "ovo"}, default="ovr"
        One-vs-one only: ``"ovo"`` returns the pairwise values,
        ``"ovr"`` scikit-learn's votes plus squashed confidences
        (:func:`ovr_decision_function`).
    break_ties : bool, default=False
        One-vs-one with ``decision_function_shape="ovr"``: predict the argmax of the
        ``"ovr"`` decision function (scikit-learn's ``break_ties=True``) instead of
        the plain vote.
    vote : {"svc", "ovo-classifier"}, default="svc"
        One-vs-one tie rule at exactly ``f_ij = 0``: ``"svc"`` (libsvm) or
        ``"ovo-classifier"`` (scikit-learn's ``OneVsOneClassifier``, which counts
        ``f_ij = 0`` as a vote for ``j`` and predicts the argmax of its ``"ovr"``
        decision function).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    n_vectors_ : int
        Kernel evaluations per prediction (terms of ``expansion``).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.svm import SVC
    >>> from sparsekm.multiclass import ExpansionClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> svc = SVC().fit(X, y)
    >>> clf = ExpansionClassifier.from_estimator(svc)
    >>> clf.scheme, clf.expansion.n_outputs
    ('ovo', 3)
    >>> bool((clf.predict(X) == svc.predict(X)).all())
    True
    """

    # Everything is in the parameters; no fitted state (see docs/persistence.md).
    _persist_attrs = {}

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        "expansion": [KernelExpansion, None], "classes": ["array-like", None],
        "scheme": [StrOptions(set(_SCHEMES))],
        "decision_function_shape": [StrOptions({"ovr", "ovo"})],
        "break_ties": BOOLEAN, "vote": [StrOptions({"svc", "ovo-classifier"})]}

    def __init__(self, expansion=None, classes=None, scheme="ovo", decision_function_shape="ovr",
                 break_ties=False, vote="svc"):
        self.expansion = expansion
        self.classes = classes
        self.scheme = scheme
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.vote = vote

    # -- construction ------------------------------------------------------------
    @classmethod
    def from_estimator(cls, estimator):
        """The exact classifier of a fitted ``SVC``, ``NuSVC``, ``OneVsRestClassifier(SVC)``
        or ``OneVsOneClassifier(SVC)`` (see :func:`sparsekm.interop.classifier_from_estimator`)."""
        return estimator_to_classifier(estimator)

    # -- validation --------------------------------------------------------------
    def _check(self):
        owner = type(self).__name__
        if not isinstance(self.expansion, KernelExpansion):
            raise TypeError(f"The 'expansion' parameter of {owner} must be a KernelExpansion; "
                            f"got {type(self.expansion).__name__}.")
        if self.scheme not in _SCHEMES:
            raise ValueError(f"The 'scheme' parameter of {owner} must be one of "
                             f"{list(_SCHEMES)}. Got {self.scheme!r} instead.")
        if self.decision_function_shape not in ("ovr", "ovo"):
            raise ValueError(f"The 'decision_function_shape' parameter of {owner} must be "
                             f"'ovr' or 'ovo'. Got {self.decision_function_shape!r} instead.")
        if self.vote not in ("svc", "ovo-classifier"):
            raise ValueError(f"The 'vote' parameter of {owner} must be 'svc' or "
                             f"'ovo-classifier'. Got {self.vote!r} instead.")
        if self.classes is None:
            raise ValueError(f"{owner} needs the class labels (classes=...).")
        classes = np.asarray(self.classes)
        k = classes.shape[0] if classes.ndim == 1 else 0
        if k < 2:
            raise ValueError(f"{owner} needs at least 2 classes; got {self.classes!r}.")
        n_out = self.expansion.n_outputs
        expected = {"binary": 1, "ovr": k, "ovo": k * (k - 1) // 2}[self.scheme]
        if n_out != expected or (self.scheme == "binary" and k != 2):
            raise ValueError(f"A {self.scheme!r} classifier over {k} classes needs an expansion "
                             f"with {expected} output(s); got {n_out}.")
        return classes

    def fit(self, X=None, y=None):
        """Nothing to learn: the classifier is its parameters. Validates them; returns self."""
        self._check()
        return self

    def __sklearn_is_fitted__(self):
        return True

    @property
    def classes_(self):
        return self._check()

    @property
    def n_features_in_(self):
        self._check()
        return self.expansion.n_features

    @property
    def n_vectors_(self):
        self._check()
        return self.expansion.n_terms

    # -- prediction --------------------------------------------------------------
    def pairwise_decision_function(self, X):
        """The raw outputs of the expansion: one column per binary machine.

        A few rows of a float64 array (up to 16, e.g. one row at a time) take a fused
        path without the engine's per-call dispatch; the numbers are the same.
        """
        self._check()
        fast = self.expansion._decision_few_rows(X) if isinstance(
            self.expansion, KernelExpansion) else None
        if fast is not None:
            return fast
        X = check_array(X, "X")
        return self.expansion.decision_function(X)

    def decision_function(self, X):
        """Decision values as scikit-learn's model returns them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) (binary), (n_samples, n_classes) (one-vs-rest,
        and one-vs-one with ``decision_function_shape="ovr"``) or
        (n_samples, n_classes * (n_classes - 1) / 2) (one-vs-one, ``"ovo"``)
        """
        return self.decision_function_from_pairwise(self.pairwise_decision_function(X))

    def predict(self, X):
        """Class labels (scikit-learn's rule for the scheme; see the class docstring).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self.predict_from_pairwise(self.pairwise_decision_function(X))

    def decision_function_from_pairwise(self, F):
        """:meth:`decision_function` from the expansion's outputs ``F`` (one column per machine)."""
        classes = self._check()
        F = np.asarray(F)
        if self.scheme != "ovo":
            return F
        k = classes.shape[0]
        F2 = np.atleast_2d(F.T).T
        if self.vote == "ovo-classifier":
            # OneVsOneClassifier: the confidence of j is -f; its binary predict is f <= 0
            D = ovr_decision_function(F2, k, second_wins=F2 <= 0)
            return D[:, 1] if k == 2 else D
        if self.decision_function_shape == "ovo" or k == 2:
            return F
        return ovr_decision_function(F2, k)

    def predict_from_pairwise(self, F):
        """:meth:`predict` from the expansion's outputs ``F`` (one column per machine)."""
        classes = self._check()
        F = np.asarray(F)
        if self.scheme == "binary":
            return classes[(F > 0).astype(int)]
        if self.scheme == "ovr":
            return classes[np.argmax(F, axis=1)]
        k = classes.shape[0]
        F2 = np.atleast_2d(F.T).T
        if self.vote == "ovo-classifier":
            D = ovr_decision_function(F2, k, second_wins=F2 <= 0)
            if k == 2:
                return classes[(D[:, 1] > 0).astype(int)]
            return classes[np.argmax(D, axis=1)]
        if self.break_ties and self.decision_function_shape == "ovr" and k > 2:
            return classes[np.argmax(ovr_decision_function(F2, k), axis=1)]
        return classes[np.argmax(ovo_votes(F2, k), axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        return tags
