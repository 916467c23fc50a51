""":class:`CompressedClassifier`, the classifier :func:`sparsekm.compress` returns."""

from __future__ import annotations

from sklearn.utils.validation import check_is_fitted

from .. import persistence
from ..models.reduced_set import ReducedSetClassifier
from ._report import ROW_KEYS, CompressReport

__all__ = ["CompressedClassifier"]

_spec = persistence.spec


# the stored class name is that of the module it was defined in before compress became
# a package: saved files keep loading
@persistence.register(name="sparsekm.compress.CompressedClassifier")
class CompressedClassifier(ReducedSetClassifier):
    """The classifier :func:`compress` returns: a :class:`ReducedSetClassifier` (same
    prediction, same file format) that also keeps the ``compress_report_``.

    Its expansion holds ``n_vectors_`` distinct vectors; its scheme is the original
    machine's (reduced-set candidates) or one-vs-rest / binary (the direct candidates:
    SLMC and the fixed-Z linear SVMs). Not meant to be fitted: build it with
    :func:`compress`.
    """

    _persist_attrs = {
        **ReducedSetClassifier._persist_attrs,
        "compress_report_": _spec.dict(_spec.one_of(
            _spec.int(min=-1), _spec.float(), _spec.str(), _spec.list(_spec.str()),
            _spec.list(_spec.dict(_spec.one_of(_spec.int(), _spec.float(), _spec.str()),
                                  keys=ROW_KEYS))), optional=True),
    }

    def fit(self, X, y):
        raise TypeError("CompressedClassifier is built by sparsekm.compress(model, ...), not "
                        "fitted; use ReducedSetClassifier to reduce an SVM by fit.")

    def plot_report(self, path=None):
        """:meth:`CompressReport.plot` of ``compress_report_`` (also after loading)."""
        return CompressReport(self.compress_report_).plot(path)

    @property
    def chosen_method_(self):
        """The candidate :func:`compress` chose, from ``compress_report_``: a reduced-set
        method (``"construct"``, ``"construct+refine"``, ``"select-*"``), a direct one
        (``"slmc"``, ``"slmc-peer"``, ``"kmeans-svm"``, ``"uniform-svm"``,
        ``"greedy-svm"``) or ``"original"``. The constructor parameters
        (``get_params()``) only fill the reduced-set fields of the file format: for a
        direct method ``method`` reads ``"construct"``, so read this attribute (or the
        report) for what was chosen."""
        check_is_fitted(self, "compress_report_")
        report = self.compress_report_
        return str(report["rows"][int(report["chosen"])]["method"])
