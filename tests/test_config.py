"""set_config, get_config, config_context: the memory sklearn_rrank may count on."""

import os
import subprocess
import sys
import threading

import pytest
from _family import available_memory

from sklearn_rrank import config_context, get_config, set_config


def test_the_default_asks_the_system_and_a_block_restores_it():
    assert get_config() == {"memory_limit": "auto"}
    with config_context(memory_limit=1000):
        assert get_config() == {"memory_limit": 1000}
        assert available_memory() == 1000  # any machine has more than 1000 bytes
        with config_context(memory_limit="auto"):
            system = available_memory()
            assert system is None or system > 1000
        assert get_config()["memory_limit"] == 1000
    assert get_config() == {"memory_limit": "auto"}
    with pytest.raises(KeyError), config_context(memory_limit=1000):
        raise KeyError("inside the block")
    assert get_config() == {"memory_limit": "auto"}


def test_the_limit_lowers_what_the_system_reports_never_raises_it():
    with config_context(memory_limit=2**62):  # more than any machine has
        limited = available_memory()
    if available_memory() is not None:  # what the system reports is kept
        assert limited < 2**62


def test_set_config_keeps_what_is_not_given():
    try:
        set_config(memory_limit=5 * 2**30)
        set_config()  # None: unchanged, as in scikit-learn
        assert get_config()["memory_limit"] == 5 * 2**30
    finally:
        set_config(memory_limit="auto")
    assert get_config()["memory_limit"] == "auto"


def test_the_settings_are_per_thread():
    seen = {}

    def other():
        seen["start"] = get_config()["memory_limit"]
        set_config(memory_limit=7)
        seen["set"] = get_config()["memory_limit"]

    with config_context(memory_limit=1000):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert get_config()["memory_limit"] == 1000
    # a thread starts from the defaults, and its changes stay in it
    assert seen == {"start": "auto", "set": 7}
    assert get_config()["memory_limit"] == "auto"


@pytest.mark.parametrize("bad", [0, -1, 1.5, "4GB", [1]])
def test_a_bad_limit_names_the_parameter(bad):
    with pytest.raises(ValueError, match="'memory_limit' parameter"):
        set_config(memory_limit=bad)
    with pytest.raises(ValueError, match="'memory_limit' parameter"):
        with config_context(memory_limit=bad):
            pass  # pragma: no cover
    with pytest.raises(TypeError, match="number of bytes"):
        set_config(memory_limit=True)
    assert get_config() == {"memory_limit": "auto"}


def _python(code, env_value, **kwargs):
    env = dict(os.environ, SKLEARN_RRANK_MEMORY_LIMIT=env_value)
    return subprocess.run(
        [sys.executable, *code], env=env, capture_output=True, text=True, **kwargs
    )


def test_the_environment_variable_sets_the_default(tmp_path):
    show = ["-c", "import sklearn_rrank; print(sklearn_rrank.get_config())"]
    assert _python(show, "123456").stdout == "{'memory_limit': 123456}\n"
    assert _python(show, "auto").stdout == "{'memory_limit': 'auto'}\n"
    bad = _python(show, "4GB")
    assert bad.returncode != 0
    assert "SKLEARN_RRANK_MEMORY_LIMIT='4GB' is not a number of bytes" in bad.stderr
    # the command line, which has no set_config: a 13-byte file implying 10^9
    # columns is refused under 1 GiB
    big = tmp_path / "big.fimi"
    big.write_text("0 1000000000")
    proc = _python(["-m", "sklearn_rrank", "bounds", str(big)], str(2**30))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"rrank: error: {big}: a sparse 1 x 1000000001")
    assert "1,073,741,824 bytes (1.0 GiB) of memory are available" in proc.stderr
