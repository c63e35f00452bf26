"""The smaller upper-bound families (each one module, found by its name).

``_rsvd`` (R-SVD, the rounded truncated SVD, and T-SVD), ``_nuclear`` (Nuclear:
nuclear-norm minimisation), ``_asso`` (Asso, the Boolean baseline), ``_permutation``
and ``_permutation_order`` (the Permutation bound of Alon, Moran and Yehudayoff).

May import: ``_core`` and ``_search``.
"""
