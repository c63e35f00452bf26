"""Nested matrices (paper Section 4): exact tests and certified factors
(``_exact``: MT, NNRR1, rank-one tests), the nearest nested matrix (``_approx``:
:class:`NestedApprox`, with the BMNA solvers in ``_bmna``) and ecological
nestedness metrics and null models (``_nestedness``: NODF, temperature).

May import: ``_core``, ``_search`` and ``_upper._rsvd``.
"""
