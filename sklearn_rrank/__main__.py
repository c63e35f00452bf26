"""``python -m sklearn_rrank`` runs the ``rrank`` command line."""

import sys

from sklearn_rrank._cli._main import main

sys.exit(main())
