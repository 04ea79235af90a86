"""The comparison behind ``python -m skrank compare``.

Grouped cross-validation of the rankers of
:data:`skrank.rankers._registry.RANKERS` (the LETOR protocol is
:func:`skrank.model_selection.letor_protocol`), and the parameters ``fit``
shows. The command line itself is in :mod:`skrank._cli`, which imports this
module.
"""

import inspect

import numpy as np
from sklearn.utils.parallel import Parallel, delayed

from .metrics import make_ranking_scorer
from .model_selection import cross_validate_ranker
from .model_selection._common import check_layout, query_splits
from .model_selection._comparison import (
    COLUMNS,
    CUTOFFS,
    _closing,
    _Progress,
    _ranker_errors,
    _runnable,
)
from .rankers._registry import RANKERS
from .utils._validation import check_n_jobs


def changed_params(est):
    """The parameters of ``est`` whose value is not its class's default, by name.

    What ``python -m skrank fit`` shows of the ranker it fits: the registry's
    settings (``random_state=0``, BoltzRank2's layer sizes) and those of
    ``--param``. A parameter without a default is always shown.
    """
    signature = inspect.signature(type(est).__init__).parameters
    return {
        name: value for name, value in est.get_params(deep=False).items()
        if name not in signature or signature[name].default is inspect.Parameter.empty
        or not _same_value(value, signature[name].default)
    }


def _same_value(value, default):
    """Whether a parameter's ``value`` is its ``default``.

    ``==`` decides where it gives one bool (numbers, strings, tuples; NaN
    equals NaN); arrays are compared element-wise, estimators by their repr
    (which lists the parameters they change), anything else by its repr.
    """
    if isinstance(value, np.ndarray) or isinstance(default, np.ndarray):
        return np.array_equal(value, default)
    if hasattr(value, "get_params") or hasattr(default, "get_params"):
        return type(value) is type(default) and repr(value) == repr(default)
    if isinstance(value, float) and isinstance(default, float) and np.isnan(value):
        return bool(np.isnan(default))
    try:
        equal = value == default
    except (ValueError, TypeError):  # e.g. a tuple holding arrays
        equal = None
    if isinstance(equal, (bool, np.bool_)):
        return bool(equal)
    return repr(value) == repr(default)


def cv_scoring(convention):
    """The scorers of the cross-validation's table, in ``COLUMNS`` order, by name."""
    scoring = {f"ndcg@{k}": make_ranking_scorer("ndcg", k=k, convention=convention)
               for k in CUTOFFS}
    scoring["map"] = make_ranking_scorer("map", convention=convention)
    return scoring


def _cv_fold(est, X, y, qid, split, scoring):
    """One fold of :func:`run_cv`: :func:`cross_validate_ranker` on that one split."""
    return cross_validate_ranker(est, X, y, qid=qid, cv=[split], scoring=scoring)


def run_cv(names, X, y, qid, *, cv, n_jobs, log, where="the data", convention="skrank"):
    """Grouped cross-validation of each ranker with its default parameters.

    The folds are those of ``cross_validate_ranker(..., cv=cv)``, each run
    by :func:`cross_validate_ranker` on its split, so the results are the
    same; ``n_jobs`` joblib workers run a ranker's folds. ``log`` gets a line
    as each fold ends, in fold order, with its NDCG@10, fit seconds and an
    estimate of the time left. Returns name -> (per-fold metrics with
    ``convention`` in ``COLUMNS`` order, fit seconds of each fold).

    A ranker whose registry entry cannot run on ``y`` (the optional boosted
    trees: labels other than small integers) is left out, with a line in
    ``log``. A ranker that fails on the data (``where`` names them) raises
    :class:`~skrank.model_selection._comparison.DataError` naming it, also
    when its folds ran in joblib workers (which re-raise the original
    error).
    """
    scoring = cv_scoring(convention)
    splits = query_splits(cv, X, y, check_layout(X, qid, "compare"))
    names = _runnable({name: RANKERS[name] for name in names}, [(where, y)], log)
    n_jobs = check_n_jobs(n_jobs, len(splits))
    progress = _Progress({name: len(splits) for name in names})
    ndcg10 = COLUMNS.index("NDCG@10")
    results = {}
    for name in names:
        log(f"[{name}] {len(splits)}-fold grouped cross-validation ...")
        est = RANKERS[name].make()
        folds = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(_cv_fold)(est, X, y, qid, split, scoring) for split in splits
        )
        rows, times = [], []
        with _ranker_errors(name, where), _closing(folds):
            for i, out in enumerate(folds, start=1):
                rows.append([out[f"test_{s}"][0] for s in scoring])
                times.append(out["fit_time"][0])
                log(f"[{name}] fold {i}/{len(splits)}: NDCG@10 {rows[-1][ndcg10]:.4f}, "
                    f"fit {times[-1]:.2f} s{progress.step(name)}")
        table = np.array(rows)
        results[name] = (table, np.array(times))
        log(f"[{name}] done: NDCG@10 {table[:, ndcg10].mean():.4f}, "
            f"fit {np.mean(times):.2f} s/fold")
    return results
