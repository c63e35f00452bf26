"""The method registry and the portfolio that runs it.

``_registry``: one frozen record per method family, which the portfolio, the
estimators and the command line all look methods up in. ``_run``: the portfolio of
``rounding_rank_bounds`` (every method once, cheap ones first, each below the best
certified bound so far, under one ``Deadline``).

May import: every family, ``_search`` and ``_core``.
"""
