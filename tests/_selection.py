"""Run the selection and inspection tools on given data with given parameters.

cross_validate_ranker, RankerSearchCV, RankerRandomizedSearchCV and
permutation_importance on a Ridge, with fast settings: the tests of the
checks these tools share call every tool the same way.
"""

from sklearn.linear_model import Ridge

from skrank.inspection import permutation_importance
from skrank.model_selection import RankerRandomizedSearchCV, RankerSearchCV, cross_validate_ranker
from skrank.rankers import ListNetRanker


#: The rows of the ``eight_queries`` fixture.
N_ROWS = 40


def three_epoch_listnet():
    """A ListNet that stops after three epochs, before converging."""
    return ListNetRanker(max_iter=3, early_stopping=False, random_state=0)


def grid_search(**params):
    return RankerSearchCV(Ridge(), {"alpha": [1e-3, 1.0]}, **params)


def randomized_search(**params):
    return RankerRandomizedSearchCV(Ridge(), {"alpha": [1e-3, 1.0]}, n_iter=2,
                                    random_state=0, **params)


SEARCHES = {"RankerSearchCV": grid_search, "RankerRandomizedSearchCV": randomized_search}


def run_tool(tool, data, **params):
    """Run one of the tools on ``data`` with ``params`` (cv=2 unless given)."""
    X, y, qid = data
    if tool == "permutation_importance":
        model = Ridge().fit(X, y)
        return permutation_importance(model, X, y, qid=qid, n_repeats=2, random_state=0,
                                      **params)
    params = {"cv": 2, **params}
    if tool == "cross_validate_ranker":
        return cross_validate_ranker(Ridge(), X, y, qid=qid, **params)
    return SEARCHES[tool](**params).fit(X, y, qid=qid)
