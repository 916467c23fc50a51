"""A user's fitted model as the exact kernel machine sparsekm works on (layer 2-3).

One conversion for :func:`sparsekm.compress` and ``sparsekm reduce``: a fitted
scikit-learn SVM (binary or one-vs-one ``SVC``/``NuSVC``, ``OneVsRestClassifier(SVC)``,
``OneVsOneClassifier(SVC)``), a sparsekm model with ``expansion_`` (or ``expansions_``),
an :class:`~sparsekm.multiclass.ExpansionClassifier` or a bare
:class:`~sparsekm.KernelExpansion` becomes an ``ExpansionClassifier`` (the same decision
function and decision rule) or, for a model without classes, a ``KernelExpansion``.
Models are recognised by what they hold (``expansion_``, ``classes_``), never by
importing the model classes: this module sits below ``models``.
"""

from __future__ import annotations

import numpy as np

from .expansion import KernelExpansion
from .multiclass import ExpansionClassifier

__all__ = ["exact_model", "exact_classifier"]


def _sklearn_svms():
    from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
    from sklearn.svm import SVC, NuSVC

    return (SVC, NuSVC, OneVsRestClassifier, OneVsOneClassifier)


def exact_model(model, *, owner="sparsekm"):
    """``model`` as an :class:`ExpansionClassifier`, or a :class:`KernelExpansion` when
    it carries no classes (a bare expansion, a regressor, a kernel PCA).

    Parameters
    ----------
    model : fitted estimator or KernelExpansion
    owner : str
        Named in error messages.

    Returns
    -------
    ExpansionClassifier or KernelExpansion

    Raises
    ------
    ValueError
        An unfitted scikit-learn SVM.
    TypeError
        Anything else that is not a kernel expansion (an unfitted sparsekm model
        included).
    """
    from .interop import classifier_from_estimator

    if isinstance(model, ExpansionClassifier):
        model._check()
        return model
    if isinstance(model, KernelExpansion):
        return model
    if isinstance(model, _sklearn_svms()):
        if not hasattr(model, "classes_") and not hasattr(model, "estimators_"):
            raise ValueError(f"{owner} needs a fitted model; {type(model).__name__} is not "
                             "fitted (call fit first).")
        return classifier_from_estimator(model)
    if hasattr(model, "_classifier") and isinstance(getattr(model, "expansion_", None),
                                                    KernelExpansion):
        model._restore_defaults()
        return model._classifier()  # a ReducedSetClassifier: its machine and classes
    if hasattr(model, "transform") and isinstance(getattr(model, "expansions_", None),
                                                  KernelExpansion):
        return model.expansions_  # sparsekm's KernelPCA: transform(X) = expansions_(X)
    psi = getattr(model, "expansion_", None)
    if not isinstance(psi, KernelExpansion):
        try:
            psi = KernelExpansion.from_estimator(model)
        except (TypeError, ValueError, AttributeError):
            psi = None
    if psi is None:
        if hasattr(model, "predict") and hasattr(model, "fit"):
            raise TypeError(
                f"{owner} cannot use a fitted {type(model).__name__}: pass a fitted SVC, a "
                "OneVsRestClassifier(SVC), a sparsekm classifier with expansion_ (e.g. SLMC, "
                "ApproxSVC, ReducedSetClassifier) or a KernelExpansion. (An unfitted sparsekm "
                "model has no expansion_: fit it first.)")
        raise TypeError(f"{owner} needs a fitted classifier or a KernelExpansion; got "
                        f"{type(model).__name__}.")
    classes = getattr(model, "classes_", None)
    if classes is not None and hasattr(model, "predict"):
        # other sparsekm classifiers: sign (binary) or one-vs-rest argmax
        classes = np.asarray(classes)
        n_out = psi.n_outputs if psi.is_multioutput else 1
        if classes.size == 2 and n_out == 1:
            return ExpansionClassifier(psi, classes, scheme="binary")
        if classes.size > 2 and n_out == classes.size:
            return ExpansionClassifier(psi, classes, scheme="ovr")
    return psi


def exact_classifier(model, y_hint=None, *, owner="sparsekm"):
    """``model`` as an exact :class:`ExpansionClassifier` (see :func:`exact_model`); a
    bare expansion takes its classes from the labels ``y_hint`` (several outputs:
    one-vs-rest over ``np.unique(y_hint)``; one output: binary, sign).

    Parameters
    ----------
    model : fitted classifier or KernelExpansion
    y_hint : array-like, optional
        All the labels at hand (a bare expansion needs them).
    owner : str

    Returns
    -------
    ExpansionClassifier
    """
    exact = exact_model(model, owner=owner)
    if isinstance(exact, ExpansionClassifier):
        return exact
    if not isinstance(model, KernelExpansion):
        raise TypeError(f"{owner} needs a classifier; a fitted {type(model).__name__} has "
                        "no classes.")
    if y_hint is None:
        raise ValueError(f"{owner}: a bare KernelExpansion carries no class labels; pass "
                         "labelled data (y_val or y_train).")
    classes = np.unique(y_hint)
    if exact.is_multioutput and exact.n_outputs > 1:
        if classes.size != exact.n_outputs:
            raise ValueError(
                f"{owner}: a multi-output KernelExpansion is read as one-vs-rest with one "
                f"output per class; the labels have {classes.size} classes but the "
                f"expansion {exact.n_outputs} outputs.")
        return ExpansionClassifier(exact, classes, scheme="ovr")
    if classes.size != 2:
        raise ValueError(f"{owner}: a single-output KernelExpansion is a binary classifier; "
                         f"the labels have {classes.size} classes.")
    return ExpansionClassifier(exact, classes, scheme="binary")
