"""Data sets: the paper's real matrices (fetched and cached), digits, generators.

The paper's Paleo, APJ and Abstracts are not shipped: :func:`fetch_paleo`,
:func:`fetch_apj` and :func:`fetch_abstracts` download them from their public
sources on first use and cache them under :func:`get_data_home`.
:func:`load_digits_binary` builds a real binary matrix from data scikit-learn
ships, with no download. :func:`load_binary_matrix` reads a matrix from a file and
:func:`load_edge_list` a graph's edge list as its sparse adjacency matrix.
"""

from sklearn_rrank.datasets._base import load_binary_matrix

# name -> loader of the data sets the command line accepts by name
from sklearn_rrank.datasets._catalog import DATASETS as DATASETS
from sklearn_rrank.datasets._digits import load_digits_binary
from sklearn_rrank.datasets._edges import load_edge_list
from sklearn_rrank.datasets._fetchers import (
    fetch_abstracts,
    fetch_apj,
    fetch_paleo,
    get_data_home,
)
from sklearn_rrank.datasets._generators import make_rounding_rank_matrix
from sklearn_rrank.datasets._nested_generator import make_nested_matrix

__all__ = [
    "fetch_abstracts",
    "fetch_apj",
    "fetch_paleo",
    "get_data_home",
    "load_binary_matrix",
    "load_digits_binary",
    "load_edge_list",
    "make_nested_matrix",
    "make_rounding_rank_matrix",
]
