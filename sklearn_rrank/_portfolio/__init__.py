"""The method registry: one frozen record per method family (``_registry``).

The portfolio of ``rounding_rank_bounds``, the estimators and the command line all
look methods up here. May import: every family, ``_search`` and ``_core``.
"""
