r"""
====================================
NDCG under its competing conventions
====================================

"NDCG@k" names several metrics. Papers, evaluation scripts and libraries
differ in the gain of a label, the discount of a rank, the order of
documents with equal scores, the value of a query without relevant
documents, and what happens when a query has fewer than :math:`k`
documents. skrank makes each choice a parameter of
:func:`~skrank.metrics.ndcg_score` (and of the other metrics), with named
presets in :data:`~skrank.metrics.CONVENTIONS`. This example scores three
hand-made queries under each convention, changing one parameter at a time
from skrank's default, then under the presets.

For one query ranked by the scores, with :math:`l_{\pi(r)}` the label at rank
:math:`r`, :math:`n` documents, gain :math:`g` and discount :math:`D`,

.. math:: \mathrm{NDCG@k} = \frac{\sum_{r=1}^{\min(k, n)} g(l_{\pi(r)}) D(r)}
          {\mathrm{IDCG@k}},

where IDCG@k is the same sum over the labels sorted in decreasing order.
"""

# %%
# Three queries where the conventions disagree
# --------------------------------------------
# * **A**, six documents with graded labels and two ties: the best document
#   (label 3) and an irrelevant one share the top score, and a document of
#   label 1 ties with an irrelevant one further down. In row order the
#   better document of each tie comes first.
# * **B**, four documents, none relevant: its IDCG is 0, so its NDCG is
#   undefined and a convention must give it a value.
# * **C**, three documents ranked worst first: shorter than :math:`k = 5`.
import matplotlib.pyplot as plt
import numpy as np
import sklearn.metrics

from skrank.metrics import CONVENTIONS, ndcg_score, precision_at_k

y = np.array([3, 0, 2, 1, 0, 2] + [0, 0, 0, 0] + [0, 1, 2])
scores = np.array([0.9, 0.9, 0.7, 0.5, 0.5, 0.2]
                  + [0.4, 0.3, 0.2, 0.1]
                  + [0.8, 0.6, 0.4])
qid = np.array(["A"] * 6 + ["B"] * 4 + ["C"] * 3)
queries = np.unique(qid)  # per-query results come in this order
K = 5
for q in queries:
    print(f"query {q}: labels {y[qid == q]}, scores {scores[qid == q]}")

# %%
# One parameter at a time
# -----------------------
# skrank's default (``convention="skrank"``) is the exponential gain
# :math:`2^l - 1`, the discount :math:`1/\log_2(r + 1)`, the expected value
# over random orders of tied documents, 0 for a query without relevant
# documents, and NDCG@n for a query of :math:`n < k` documents. Each of the
# other rows changes one of these:
#
# * ``gain="linear"``: the gain is the label :math:`l` itself, which weighs
#   label 3 less against label 1;
# * ``discount="letor"``: :math:`1/\max(1, \log_2 r)`, as the LETOR scripts,
#   which do not discount rank 2;
# * ``ties="stable"``: tied documents keep their row order (the LETOR
#   scripts); ``ties="pessimistic"``: the worst label first;
# * ``no_relevant``: the value of query B, or ``"skip"`` to leave it out of
#   the mean (NaN in the per-query values);
# * ``short_queries="zero"``: query C, shorter than :math:`k`, scores 0 (LETOR
#   3.0); ``"pad"`` counts the missing ranks as irrelevant documents.
settings = {
    "skrank (default)": {},
    'gain="linear"': {"gain": "linear"},
    'discount="letor"': {"discount": "letor"},
    'ties="stable"': {"ties": "stable"},
    'ties="pessimistic"': {"ties": "pessimistic"},
    "no_relevant=1.0": {"no_relevant": 1.0},
    'no_relevant="skip"': {"no_relevant": "skip"},
    'short_queries="zero"': {"short_queries": "zero"},
    'short_queries="pad"': {"short_queries": "pad"},
}


def scores_under(params):
    """NDCG@K of each query and their mean under the given conventions."""
    per_query = ndcg_score(y, scores, qid=qid, k=K, average=False, **params)
    mean = ndcg_score(y, scores, qid=qid, k=K, **params)
    return np.append(per_query, mean)


table = {name: scores_under(params) for name, params in settings.items()}
columns = [f"query {q}" for q in queries] + ["mean"]


def print_table(rows):
    print(f"NDCG@{K}".ljust(24) + "".join(c.rjust(9) for c in columns))
    for name, row in rows.items():
        print(name.ljust(24) + "".join(f"{v:9.4f}" for v in row))


print_table(table)

# %%
# For NDCG, padding a short query changes nothing: the missing ranks add no
# gain to DCG@k nor to IDCG@k. Precision@k is where ``"pad"`` and
# ``"truncate"`` differ, dividing the hits of query C by :math:`k` instead of
# by its length.
for short in ["truncate", "pad", "zero"]:
    p = precision_at_k(y, scores, qid=qid, k=K, average=False, short_queries=short)
    print(f'P@{K}, short_queries="{short}":'.ljust(34), np.round(p, 4))

# %%
# The presets
# -----------
# ``convention="letor"`` reproduces the official LETOR 3.0 evaluation script
# and ``convention="sklearn"`` :func:`sklearn.metrics.ndcg_score`; a parameter
# given explicitly overrides its preset's value.
for name, preset in CONVENTIONS.items():
    print(f"{name:8s}", preset)

presets = {f'convention="{name}"': scores_under({"convention": name})
           for name in CONVENTIONS}
print_table(presets)

# %%
# ``convention="sklearn"`` gives the numbers of scikit-learn, which scores
# queries of equal length as the rows of a matrix, here one query at a time:
for q in queries:
    rows = qid == q
    ours = ndcg_score(y[rows], scores[rows], qid=qid[rows], k=K, convention="sklearn")
    theirs = sklearn.metrics.ndcg_score(y[rows][None], scores[rows][None], k=K)
    print(f"query {q}: skrank {ours:.6f}, sklearn.metrics.ndcg_score {theirs:.6f}, "
          f"difference {abs(ours - theirs):.1e}")

# %%
# All conventions in one picture
# ------------------------------
# Each row is a convention, each column a query or the mean over queries.
# A framed cell differs from skrank's default; the blank cell is the query
# that ``no_relevant="skip"`` leaves out.
rows = {**table, **presets}
values = np.array(list(rows.values()))
default = table["skrank (default)"]

fig, ax = plt.subplots(figsize=(6.5, 6))
image = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
for i, row in enumerate(values):
    for j, value in enumerate(row):
        if np.isnan(value):
            ax.text(j, i, "skipped", ha="center", va="center", fontsize=8)
            continue
        ax.text(j, i, f"{value:.3f}", ha="center", va="center", fontsize=8,
                color="black" if value > 0.6 else "white")
        if not np.isclose(value, default[j]):
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                       edgecolor="red", linewidth=2))
ax.axhline(len(table) - 0.5, color="white", linewidth=3)  # presets below
ax.set_xticks(np.arange(len(columns)), columns)
ax.set_yticks(np.arange(len(rows)), list(rows))
ax.set_title(f"NDCG@{K} of queries A, B, C")
fig.colorbar(image, ax=ax, shrink=0.8)
fig.tight_layout()
plt.show()
