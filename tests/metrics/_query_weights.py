"""Query weights of the tests of the metrics and the scorers."""

import numpy as np


def row_weights(qid, weight_of):
    """The weight of each row: that of its query in the dict ``weight_of``."""
    return np.array([weight_of[q] for q in qid.tolist()])
