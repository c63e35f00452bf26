"""The rank-search layer: the one skeleton every rank-searching method runs in.

``_skeleton`` holds the wall-clock ``Deadline``, the ``Incumbent`` (the best
certificate so far), ``BinaryData`` and ``run_rank_search``.

May import: ``_core``.
"""
