"""ProgressPrinter: plain lines on files, in-place redraws on terminals."""

import io
import threading
import time

import numpy as np
import pytest
from _family import ProgressPrinter

from sklearn_rrank import rounding_rank_bounds


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


class Clock:
    """A settable stand-in for ``time.monotonic`` that counts its reads."""

    def __init__(self):
        self.now = 1000.0
        self.reads = 0
        self._read = threading.Condition()

    def __call__(self):
        with self._read:
            self.reads += 1
            self._read.notify_all()
        return self.now

    def read_again(self, times=1):
        """Wait until another thread (the heartbeat) has read the clock ``times``
        more times; False after 10 s without."""
        with self._read:
            n = self.reads
            return self._read.wait_for(lambda: self.reads >= n + times, timeout=10)


class Written(io.StringIO):
    """A stream that says when something was written to it."""

    def __init__(self):
        super().__init__()
        self.written = threading.Event()

    def write(self, text):
        n = super().write(text)
        self.written.set()
        return n


@pytest.fixture
def clock():
    return Clock()


def ev(stage, k=None, bound=None, error=None, elapsed=0.0, message="", method="rsvd"):
    return {
        "method": method,
        "stage": stage,
        "k": k,
        "bound": bound,
        "error": error,
        "elapsed": elapsed,
        "message": message,
    }


def test_plain_stream_throttles_steps_and_prints_improved_and_end(clock):
    out = io.StringIO()
    show = ProgressPrinter(out, clock=clock, interval=5)
    show(ev("start"))  # first event: printed
    for i in range(100):  # within 5 s: throttled
        clock.now += 0.01
        show(ev("step", k=1, error=500 - i, elapsed=i * 0.01))
    show(ev("improved", k=3, bound=3, error=0, elapsed=1.5))
    clock.now += 5.0
    show(ev("step", k=4, error=10, elapsed=6.5))  # interval passed: printed
    show(ev("end", bound=3, elapsed=7.0, message="certified rank 3"))
    lines = out.getvalue().splitlines()
    assert lines == [
        "rsvd  0.0s",
        "rsvd  rank 3  bound 3  0 wrong entries  1.5s",
        "rsvd  rank 4  bound 3  10 wrong entries  6.5s",
        "rsvd  bound 3  7.0s  done  certified rank 3",
    ]
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_error_is_least_at_current_k(clock):
    out = io.StringIO()
    show = ProgressPrinter(out, clock=clock, interval=0)
    show(ev("step", k=2, error=30))
    show(ev("step", k=2, error=50))  # worse at the same k: the best stays
    show(ev("step", k=3, error=40))  # a new k starts afresh
    assert [line.split("  ")[2] for line in out.getvalue().splitlines()] == [
        "30 wrong entries",
        "30 wrong entries",
        "40 wrong entries",
    ]


def test_tty_redraws_in_place_at_most_ten_times_a_second(clock):
    out = FakeTTY()
    show = ProgressPrinter(out, clock=clock)
    for i in range(1000):  # 1000 events over 1 s
        clock.now += 0.001
        show(ev("step", k=i // 100 + 1, bound=None, error=i, elapsed=i / 1000))
    text = out.getvalue()
    redraws = text.count("\r")
    assert 9 <= redraws <= 11, redraws
    assert "\n" not in text  # all in place
    assert text.startswith("\rrsvd  rank 1") and text.endswith("\x1b[K")
    show(ev("end", bound=7, elapsed=1.0, message="certified rank 7"))
    assert out.getvalue().endswith(
        "\rrsvd  bound 7  1.0s  done  certified rank 7\x1b[K\n"
    )


def test_tty_line_cut_to_terminal_width(clock, monkeypatch):
    monkeypatch.setenv("COLUMNS", "30")  # a terminal 30 columns wide
    out = FakeTTY()
    ProgressPrinter(out, clock=clock)(ev("step", k=1, message="x" * 200))
    line = out.getvalue()[1:].replace("\x1b[K", "")
    assert len(line) < 30 and line.endswith("...")


def test_close_ends_a_live_tty_line(clock):
    out = FakeTTY()
    with ProgressPrinter(out, clock=clock) as show:
        show(ev("step", k=1))
        assert not out.getvalue().endswith("\n")
    assert out.getvalue().endswith("\n")
    plain = io.StringIO()
    with ProgressPrinter(plain, clock=clock) as show:
        show(ev("step", k=1))
    assert plain.getvalue().count("\n") == 1  # nothing added on a plain stream


def test_quiet_prints_nothing():
    out = FakeTTY()
    show = ProgressPrinter(out, quiet=True)
    for stage in ("start", "step", "improved", "end"):
        show(ev(stage, k=1, bound=1))
    show.close()
    assert out.getvalue() == "" and show.n_written_ == 0


def test_default_stream_is_stderr_at_call_time(capsys):
    show = ProgressPrinter()
    show(ev("end", bound=2, elapsed=0.25))
    captured = capsys.readouterr()
    assert captured.out == "" and "rsvd  bound 2  0.2s  done" in captured.err


def test_broken_stream_goes_quiet():
    out = io.StringIO()
    show = ProgressPrinter(out)
    out.close()
    show(ev("end", bound=1))  # must not raise
    assert show.quiet


def test_cheap_to_call():
    out = FakeTTY()
    show = ProgressPrinter(out)
    events = [ev("step", k=i % 50, error=i, elapsed=i * 1e-5) for i in range(50_000)]
    t0 = time.perf_counter()
    for e in events:
        show(e)
    per_call = (time.perf_counter() - t0) / len(events)
    assert per_call < 20e-6, per_call  # measured about 1 microsecond
    assert show.n_written_ <= 2 + 10 * (time.perf_counter() - t0) + 1


def test_heartbeat_redraws_a_silent_phase_with_the_elapsed_time(clock):
    out = Written()
    show = ProgressPrinter(out, heartbeat=0.2, clock=clock)
    show(ev("start", elapsed=1.0, method="vc"))
    for _ in range(2):  # 0.3 s without an event, on the printer's clock: one beat
        out.written.clear()
        clock.now += 0.3
        assert out.written.wait(timeout=10)
    show(ev("end", bound=3, elapsed=2.0, method="vc"))
    n_lines = out.getvalue().count("\n")
    clock.now += 1.0  # nothing runs after the end: no more lines
    assert clock.read_again(times=2)  # a whole beat saw the new time
    show.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == n_lines
    assert lines == ["vc  1.0s", "vc  1.3s", "vc  1.6s", "vc  bound 3  2.0s  done"]
    assert not show._thread  # stopped by close


def test_lower_bounds_and_the_input_checks_send_start_events():
    events = []
    rounding_rank_bounds(np.eye(6), methods=("vc",), progress=events.append)
    starts = [(e["method"], e["stage"]) for e in events]
    assert starts == [("data", "start"), ("vc", "start"), ("vc", "end")]
    assert all(set(e) >= {"method", "stage", "k", "bound", "elapsed"} for e in events)
