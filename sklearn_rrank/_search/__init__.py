"""The rank-search layer: the one skeleton every rank-searching method runs in.

``_skeleton`` holds the wall-clock ``Deadline``, the ``Incumbent`` (the best
certificate so far), ``BinaryData`` and ``run_rank_search``; ``_policy`` holds
the ``SearchPolicy``, every rule that chooses a rank, a start, a slice or a
share; ``_bracket`` holds the bracket search (``bracket_search``) that runs the
policy for the families with "fit at k" semantics; ``RoundingRankCV``, ProjLP's
descent and the portfolio ask the same policy.

May import: ``_core``.
"""
