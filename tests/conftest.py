import numpy as np
import pytest
from hypothesis import settings

from sklearn_rrank._search._skeleton import Deadline

settings.register_profile("default", deadline=None, max_examples=30)
settings.load_profile("default")


@pytest.fixture(params=[0, 1, 2])
def global_random_seed(request):
    """A few fixed seeds, so that randomized tests are reproducible and varied."""
    return request.param


@pytest.fixture
def rng(global_random_seed):
    return np.random.default_rng(global_random_seed)


@pytest.fixture(scope="session")
def digits():
    """scikit-learn's digits, pixel >= 8 as 1 (1797 x 64): real data, no download."""
    from sklearn_rrank.datasets import load_digits_binary

    return load_digits_binary().data


@pytest.fixture(scope="session")
def digits150(digits):
    """The first 150 images of the binary digits (150 x 64, real rank 46)."""
    return digits[:150].copy()


@pytest.fixture(scope="session")
def digits150_bounds(digits150):
    """``rounding_rank_bounds(digits150, random_state=0, n_jobs=2)``, run once."""
    from sklearn_rrank import rounding_rank_bounds

    return rounding_rank_bounds(digits150, random_state=0, n_jobs=2)


class CountingDeadline(Deadline):
    """A limited deadline that expires after ``n_checks`` calls of ``expired()``.

    No clock is read by the checks, so tests of where a routine looks at its
    deadline are deterministic; ``n_checks=None`` never expires (it counts only).
    Sub-deadlines are the deadline itself (they expire with it).
    """

    def __init__(self, n_checks=None):
        super().__init__(1e9)
        self.n_checks, self.calls = n_checks, 0

    def expired(self):
        self.calls += 1
        return self.n_checks is not None and self.calls > self.n_checks

    def passed(self):
        """Whether the deadline has expired, without counting a check."""
        return self.n_checks is not None and self.calls > self.n_checks

    def child(self, seconds=None, *, fraction=None):
        return self


@pytest.fixture
def counting_deadline():
    """The class :class:`CountingDeadline` (a deadline expiring after N checks)."""
    return CountingDeadline
