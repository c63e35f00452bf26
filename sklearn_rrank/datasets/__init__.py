"""Data sets: the paper's real matrices, file loaders and synthetic generators."""

from sklearn_rrank.datasets._base import (
    load_abstracts,
    load_apj,
    load_binary_matrix,
    load_paleo,
)
from sklearn_rrank.datasets._generators import make_rounding_rank_matrix
from sklearn_rrank.datasets._nested_generator import make_nested_matrix

__all__ = [
    "load_abstracts",
    "load_apj",
    "load_binary_matrix",
    "load_paleo",
    "make_nested_matrix",
    "make_rounding_rank_matrix",
]

#: bundled data set name -> loader (the names the ``rrank`` command line accepts)
DATASETS = {"paleo": load_paleo, "apj": load_apj, "abstracts": load_abstracts}
