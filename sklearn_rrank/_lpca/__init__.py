"""The L-PCA family: logistic PCA fits and their rank search.

``_fit`` (``lpca_fit``, the public door of one fit), ``_transform``
(``lpca_transform``: new rows for a fixed right factor), ``_model`` (data, entry
kernels, bias models, likelihoods), ``_start`` (starting points), ``_newton`` and
``_lbfgs`` (the solvers), ``_refine`` (the LP refinement of the rescue), ``_search``
(the family's rank search), ``_distributed`` and ``_distributed_block`` (the
data-parallel fit on a Dask cluster).

May import: ``_core``, ``_search``, ``_projlp._lp`` (the LP formulations of the
rescue) and ``_upper._rsvd``.
"""
