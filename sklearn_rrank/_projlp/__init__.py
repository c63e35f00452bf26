"""The ProjLP family: random projections plus separating LPs (paper Section 3).

``_projlp`` (one fit), ``_lp`` (the row and column LP formulations), ``_copied``
(phase 0 on large inputs) and ``_search`` (the family's rank search).

May import: ``_core``, ``_search`` and ``_upper._rsvd``.
"""
