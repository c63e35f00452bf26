"""A real binary matrix that needs no download: scikit-learn's digits, thresholded."""

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.utils import Bunch

__all__ = ["load_digits_binary"]

# a pixel of load_digits() (gray level 0-16) at or above this is a 1
_THRESHOLD = 8

_DESCR = """Binary digits data set
======================

scikit-learn's handwritten digits (sklearn.datasets.load_digits: 1797 images of
8 x 8 pixels with gray levels 0-16), each pixel set to 1 when its gray level is
at least 8 and to 0 otherwise: 1797 images x 64 pixels, 37151 ones, real rank 54.
Built at run time from the copy that scikit-learn ships; nothing is downloaded.

Source: UCI Machine Learning Repository, Optical Recognition of Handwritten
Digits (E. Alpaydin, C. Kaynak), as shipped with scikit-learn
(sklearn/datasets/data/digits.csv.gz).

Licence: as distributed with scikit-learn (BSD-3-Clause); data from the UCI
Machine Learning Repository.
"""


def load_digits_binary(*, sparse=False):
    """Load scikit-learn's digits as a binary matrix: 1797 images x 64 pixels.

    The images of :func:`sklearn.datasets.load_digits` with every pixel of gray
    level 8 or more (of 16) set to 1. It is built at run time from data that
    scikit-learn ships, so it needs neither a download nor a data home; it is the
    command line's data set ``digits`` (``rrank bounds digits``).

    Parameters
    ----------
    sparse : bool, default=False
        Return ``data`` as a CSR matrix (uint8) instead of a dense array.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (ndarray of shape (1797, 64), dtype uint8, or CSR matrix; 37151
        ones, real rank 54), ``target`` (ndarray of shape (1797,), the digit of
        each image), ``DESCR``, ``source``, ``licence`` and ``name`` (``"digits"``).

    Examples
    --------
    >>> from sklearn_rrank.datasets import load_digits_binary
    >>> X = load_digits_binary().data
    >>> X.shape, X.dtype, int(X.sum())
    ((1797, 64), dtype('uint8'), 37151)
    """
    digits = load_digits()
    X = (digits.data >= _THRESHOLD).astype(np.uint8)
    return Bunch(
        data=sp.csr_matrix(X) if sparse else X,
        target=digits.target,
        DESCR=_DESCR,
        source=(
            "scikit-learn's sklearn.datasets.load_digits (UCI Optical Recognition of "
            "Handwritten Digits), pixel gray level >= 8 as 1."
        ),
        licence="BSD-3-Clause (as shipped with scikit-learn); data: UCI repository.",
        name="digits",
    )
