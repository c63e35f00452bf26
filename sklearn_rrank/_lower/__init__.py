"""The lower-bound families: ``_spectral`` (the spectral bound) and ``_vc`` (the
VC-dimension bound, with ``_vc_search``, its search for a largest shattered set).

May import: ``_core`` and ``_search``.
"""
