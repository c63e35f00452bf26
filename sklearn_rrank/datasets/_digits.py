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
at least 8 and to 0 otherwise: 1797 images x 64 pixels, 37151 ones, ordinary
(linear-algebra) rank 54. Built at run time from the copy that scikit-learn
ships; nothing is downloaded.

Source: UCI Machine Learning Repository, Optical Recognition of Handwritten
Digits (E. Alpaydin, C. Kaynak), as shipped with scikit-learn
(sklearn/datasets/data/digits.csv.gz).

Licence: as distributed with scikit-learn (BSD-3-Clause); data from the UCI
Machine Learning Repository.
"""


def load_digits_binary(*, return_X_y=False, as_frame=False, sparse=False):
    """Load scikit-learn's digits as a binary matrix: 1797 images x 64 pixels.

    The images of :func:`sklearn.datasets.load_digits` with every pixel of gray
    level 8 or more (of 16) set to 1. It is built at run time from data that
    scikit-learn ships, so it needs neither a download nor a data home; it is the
    command line's data set ``digits`` (``rrank bounds digits``). The parameters
    and the fields of the result follow scikit-learn's loaders.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return the tuple ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        Return ``data`` as a pandas DataFrame (uint8 columns named by
        ``feature_names``) and ``target`` as a Series named ``"target"``; the
        Bunch's ``frame`` holds both. Needs pandas.
    sparse : bool, default=False
        Return ``data`` as a CSR matrix (uint8) instead of a dense array (not
        with ``as_frame=True``).

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (ndarray of shape (1797, 64), dtype uint8, CSR matrix or
        DataFrame; 37151 ones, ordinary rank 54), ``target`` (ndarray of shape
        (1797,), the digit of each image, or Series), ``frame`` (DataFrame of
        data and target with ``as_frame=True``, else None), ``feature_names``
        (list of 64 str, ``"pixel_<row>_<column>"``), ``target_names`` (ndarray
        ``0, ..., 9``), ``DESCR``, ``source``, ``licence`` and ``name``
        (``"digits"``).
    (data, target) : tuple
        With ``return_X_y=True``.

    Raises
    ------
    ValueError
        If ``as_frame`` and ``sparse`` are both True.

    Examples
    --------
    >>> from sklearn_rrank.datasets import load_digits_binary
    >>> X, y = load_digits_binary(return_X_y=True)
    >>> X.shape, X.dtype, int(X.sum()), y[:5].tolist()
    ((1797, 64), dtype('uint8'), 37151, [0, 1, 2, 3, 4])
    >>> bunch = load_digits_binary()
    >>> bunch.feature_names[:2], bunch.target_names.tolist()
    (['pixel_0_0', 'pixel_0_1'], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    """
    if as_frame and sparse:
        raise ValueError(
            "as_frame=True and sparse=True cannot be combined: a DataFrame is "
            "dense; choose one of them."
        )
    digits = load_digits()
    X = (digits.data >= _THRESHOLD).astype(np.uint8)
    target = digits.target
    feature_names = list(digits.feature_names)
    frame = None
    if sparse:
        data = sp.csr_matrix(X)
    elif as_frame:
        import pandas as pd

        data = pd.DataFrame(X, columns=feature_names)
        target = pd.Series(target, name="target")
        frame = pd.concat([data, target], axis=1)
    else:
        data = X
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=feature_names,
        target_names=np.asarray(digits.target_names),
        DESCR=_DESCR,
        source=(
            "scikit-learn's sklearn.datasets.load_digits (UCI Optical Recognition of "
            "Handwritten Digits), pixel gray level >= 8 as 1."
        ),
        licence="BSD-3-Clause (as shipped with scikit-learn); data: UCI repository.",
        name="digits",
    )
