"""The settings of sklearn_rrank: set_config, get_config and config_context.

Made like scikit-learn's (:func:`sklearn.set_config`): the settings are held per
thread, a thread starts from the defaults read at import, and ``None`` passed to
:func:`set_config` leaves a setting as it is. The one setting is ``memory_limit``,
the bytes that :func:`~sklearn_rrank._core._memory.available_memory` reports at most.
"""

import os
import threading
from contextlib import contextmanager
from numbers import Integral

from sklearn.utils._param_validation import Interval, StrOptions, validate_params

__all__ = ["config_context", "get_config", "set_config"]

#: the environment variable that sets ``memory_limit`` at import (for ``rrank``)
MEMORY_LIMIT_ENV = "SKLEARN_RRANK_MEMORY_LIMIT"


def _memory_limit_from_env():
    text = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if text in ("", "auto"):
        return "auto"
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(
            f"the environment variable {MEMORY_LIMIT_ENV}={text!r} is not a number "
            "of bytes: set it to a positive integer (4000000000 for 4 GB) or 'auto', "
            "or unset it."
        )
    return value


_global_config = {"memory_limit": _memory_limit_from_env()}
_threadlocal = threading.local()


def _thread_config():
    """This thread's settings (mutable), copied from the defaults on first use."""
    if not hasattr(_threadlocal, "config"):
        _threadlocal.config = _global_config.copy()
    return _threadlocal.config


def get_config():
    """The current settings of sklearn_rrank.

    Returns
    -------
    config : dict
        The keys are the parameters of :func:`set_config`: ``{"memory_limit":
        "auto"}`` unless changed. A copy: changing it changes nothing.

    See Also
    --------
    set_config : Change the settings.
    config_context : Change the settings within a ``with`` block.

    Examples
    --------
    >>> import sklearn_rrank
    >>> sklearn_rrank.get_config()
    {'memory_limit': 'auto'}
    """
    return _thread_config().copy()


@validate_params(
    {
        "memory_limit": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
            None,
        ]
    },
    prefer_skip_nested_validation=True,
)
def set_config(memory_limit=None):
    """Change the settings of sklearn_rrank.

    As :func:`sklearn.set_config`: the settings hold for the calling thread (a
    new thread starts from the defaults), and a parameter left at ``None`` keeps
    its current value. :func:`config_context` changes them for a ``with`` block.

    Parameters
    ----------
    memory_limit : int or "auto", default=None
        The most memory, in bytes, that sklearn_rrank counts as available: the
        checks that refuse a file or matrix too large to load, skip a method whose
        dense work array would not fit, and cut an SVD to the singular triplets
        that fit (R-SVD), use the smaller of this and the memory the operating
        system reports available. Set it to stay within a share of a machine shared
        with other work (a Dask worker's ``memory_limit``, a job's part of a
        node). ``"auto"``: the memory the operating system reports (its
        ``MemAvailable``, lowered to a container's cgroup limit). At import, the
        environment variable ``SKLEARN_RRANK_MEMORY_LIMIT`` (bytes, or ``auto``)
        sets the default, also for the ``rrank`` command; else ``"auto"``. The
        limit guards the large allocations; it does not cap the process.

    Raises
    ------
    ValueError
        If ``memory_limit`` is not a positive integer, ``"auto"`` or None
        (scikit-learn's ``InvalidParameterError``, also a ``TypeError``); at import,
        if ``SKLEARN_RRANK_MEMORY_LIMIT`` is neither a positive integer nor ``auto``.
    TypeError
        If ``memory_limit`` is a bool.

    See Also
    --------
    get_config : The current settings.
    config_context : The settings within a ``with`` block.

    Examples
    --------
    >>> import sklearn_rrank
    >>> sklearn_rrank.set_config(memory_limit=4 * 2**30)  # 4 GiB at most
    >>> sklearn_rrank.get_config()["memory_limit"]
    4294967296
    >>> sklearn_rrank.set_config(memory_limit="auto")  # what the system reports
    """
    if isinstance(memory_limit, bool):  # an Integral, but never a number of bytes
        raise TypeError(
            f"memory_limit must be a number of bytes or 'auto', got {memory_limit!r}."
        )
    if memory_limit is not None:
        _thread_config()["memory_limit"] = (
            memory_limit if memory_limit == "auto" else int(memory_limit)
        )


@contextmanager
def config_context(*, memory_limit=None):
    """Change the settings of sklearn_rrank within a ``with`` block.

    As :func:`sklearn.config_context`: the settings are those of
    :func:`set_config` for the calling thread, and all of them are back to their
    values before the block when it ends (also on an exception).

    Parameters
    ----------
    memory_limit : int or "auto", default=None
        The most memory, in bytes, counted as available (see :func:`set_config`);
        None keeps the current value.

    Yields
    ------
    None

    Raises
    ------
    ValueError
        If ``memory_limit`` is not a positive integer, ``"auto"`` or None
        (scikit-learn's ``InvalidParameterError``, also a ``TypeError``).

    See Also
    --------
    set_config : Change the settings.
    get_config : The current settings.

    Examples
    --------
    Data that would not fit in 1 GiB are refused before any work:

    >>> import scipy.sparse as sp
    >>> import sklearn_rrank
    >>> X = sp.csr_matrix(([1.0], ([0], [7])), shape=(1, 10**9))
    >>> with sklearn_rrank.config_context(memory_limit=2**30):
    ...     try:
    ...         sklearn_rrank.rounding_rank_bounds(X)
    ...     except ValueError as exc:
    ...         print(str(exc).split("but ")[1])  # the end of the message
    only 1,073,741,824 bytes (1.0 GiB) of memory are available.
    >>> sklearn_rrank.get_config()["memory_limit"]
    'auto'
    """
    old = get_config()
    set_config(memory_limit=memory_limit)
    try:
        yield
    finally:
        _thread_config().update(old)
