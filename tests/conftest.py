import numpy as np
import pytest
from hypothesis import settings

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
def paleo():
    from sklearn_rrank.datasets import load_paleo

    return load_paleo().data


@pytest.fixture(scope="session")
def apj():
    from sklearn_rrank.datasets import load_apj

    return load_apj().data
