"""The rank-search layer: the one skeleton every rank-searching method runs in.

``_skeleton`` holds the wall-clock ``Deadline``, the ``Incumbent`` (the best
certificate so far), ``BinaryData`` and ``run_rank_search``; ``_bracket`` holds the
bracket search (``bracket_search``: which rank to fit next, from where and for how
long) that the families with "fit at k" semantics and ``RoundingRankCV`` use.

May import: ``_core``.
"""
