"""``ProgressPrinter``: a live progress line for the command line and ``verbose``.

The rank searches send progress events, dicts with the keys ``method`` (str),
``stage`` (``"start"``, ``"step"``, ``"improved"`` or ``"end"``), ``k`` (int or
None), ``bound`` (int or None), ``error`` (int or None: wrong entries), ``elapsed``
(float seconds) and ``message`` (str, may be empty). :class:`ProgressPrinter` turns
them into one line per method. It is called for every event, possibly thousands of
times per second, so an event that is not shown costs a few dict look-ups and one
clock read.
"""

import shutil
import sys
import threading
from time import monotonic as _monotonic

__all__ = ["ProgressPrinter", "event"]

_CLEAR_EOL = "\x1b[K"


def event(method, stage, *, k=None, bound=None, error=None, elapsed=0.0, message=""):
    """A progress event (the dict of the module docstring) with every key set."""
    return {
        "method": method,
        "stage": stage,
        "k": k,
        "bound": bound,
        "error": error,
        "elapsed": elapsed,
        "message": message,
    }


class ProgressPrinter:
    """Write rank-search progress events as a live line on a stream.

    Each line shows the method, the rank being fitted (omitted when the event has
    none), the best bound so far (a lower or an upper bound, as ``kinds`` says),
    the least number of wrong entries so far at that rank, the elapsed seconds and
    the event's message, e.g.
    ``rsvd  rank 12  upper bound 68  835 wrong entries  3.2s  SVD of 128 components``.

    On a terminal (``stream.isatty()`` true) the line is redrawn in place
    (carriage return, then "clear to end of line") at most ``1 / redraw_interval``
    times per second, cut to the terminal width; an ``"end"`` event always draws the
    method's final line and ends it with a newline. On any other stream (a file, a
    pipe, a log) a plain line is written at most every ``interval`` seconds, plus
    one line at every ``"improved"`` and every ``"end"`` event.

    Parameters
    ----------
    stream : file-like or None, default=None
        Where to write; None means ``sys.stderr`` at call time.
    interval : float, default=5.0
        Least seconds between two throttled plain lines (non-terminal streams).
    quiet : bool, default=False
        If True, print nothing.
    redraw_interval : float, default=0.1
        Least seconds between two redraws on a terminal.
    kinds : mapping of str to str or None, default=None
        ``"lower"`` or ``"upper"`` for each method: its bound is shown as
        ``lower bound N`` or ``upper bound N`` (``bound N`` for other methods).
    heartbeat : float or None, default=None
        If set, a background thread redraws the last event's line with the elapsed
        time brought up to date whenever nothing was written for ``heartbeat``
        seconds, so that a phase that sends no events (an SVD, a VC search, a
        long LP) never leaves the line frozen. The thread starts at the first event
        and stops at :meth:`close`.
    clock : callable, default=time.monotonic
        Seconds of a monotonic clock: what the intervals are measured on.

    Attributes
    ----------
    n_written_ : int
        Number of writes done so far.

    Notes
    -----
    Writing never raises: if the stream fails (closed, broken pipe), the printer
    goes quiet. Call :meth:`close` (or use the printer as a context manager) to end
    a live terminal line with a newline.

    Examples
    --------
    >>> import io
    >>> from sklearn_rrank._core._progress import ProgressPrinter
    >>> out = io.StringIO()
    >>> show = ProgressPrinter(out, kinds={"rsvd": "upper"})
    >>> show({"method": "rsvd", "stage": "improved", "k": 68, "bound": 68,
    ...       "error": 0, "elapsed": 0.5, "message": ""})
    >>> print(out.getvalue(), end="")
    rsvd  rank 68  upper bound 68  0 wrong entries  0.5s
    """

    def __init__(
        self,
        stream=None,
        *,
        interval=5.0,
        quiet=False,
        redraw_interval=0.1,
        heartbeat=None,
        kinds=None,
        clock=_monotonic,
    ):
        self.stream = stream
        self.kinds = dict(kinds or {})
        self._clock = clock
        self.interval = float(interval)
        self.quiet = bool(quiet)
        self.redraw_interval = float(redraw_interval)
        self.heartbeat = None if heartbeat is None else float(heartbeat)
        self._lock = threading.Lock()  # the heartbeat thread writes too
        self._stop = threading.Event()
        self._thread = None
        self._event = None  # (last event, clock when it came) for the heartbeat
        self._wrote = clock()  # clock of the last write of any kind
        self.n_written_ = 0
        self._tty = None  # decided at the first event
        self._last = float("-inf")  # clock of the last throttled write
        self._live = False  # a terminal line without its newline is on screen
        self._bound = {}  # method -> best bound so far
        self._error = {}  # method -> (k, least error at k)

    # -- the hot path --------------------------------------------------------------
    def __call__(self, event):
        """Take one progress event (a dict, see the module docstring)."""
        if self.quiet:
            return
        method = event.get("method", "")
        bound = event.get("bound")
        if bound is not None:
            self._bound[method] = bound
        error = event.get("error")
        if error is not None:
            k = event.get("k")
            prev = self._error.get(method)
            if prev is None or prev[0] != k or error < prev[1]:
                self._error[method] = (k, error)
        stage = event.get("stage")
        if self._tty is None:
            self._tty = self._isatty()
        now = self._clock()  # the one clock read of the hot path
        if self.heartbeat is not None:
            self._event = (event, now)
            if self._thread is None:
                self._start_heartbeat()
        if stage == "end":
            self._write(event, final=True)
            return
        if self._tty:
            if now - self._last >= self.redraw_interval:
                self._last = now
                self._write(event, final=False)
        elif stage == "improved" or now - self._last >= self.interval:
            self._last = now
            self._write(event, final=True)

    # -- the heartbeat -------------------------------------------------------------
    def _start_heartbeat(self):
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._beat, name="rrank-progress-heartbeat", daemon=True
        )
        self._thread.start()

    def _beat(self):
        period = self.heartbeat
        while not self._stop.wait(min(period / 4, 0.5)):
            now = self._clock()
            last = self._event
            if self.quiet or last is None or now - self._wrote < period:
                continue
            event, at = last
            if event.get("stage") == "end":
                continue  # nothing is running that the line could speak for
            event = dict(event)
            if event.get("elapsed") is not None:
                event["elapsed"] = event["elapsed"] + (now - at)
            self._write(event, final=not self._tty)

    # -- formatting and writing ----------------------------------------------------
    def _isatty(self):
        try:
            return bool(self._stream().isatty())
        except (AttributeError, OSError, ValueError):
            return False

    def _stream(self):
        return sys.stderr if self.stream is None else self.stream

    def format(self, event):
        """The text of the line for ``event`` (without control characters).

        Parameters
        ----------
        event : dict
            A progress event.

        Returns
        -------
        line : str
            The progress line.
        """
        method = event.get("method", "")
        k = event.get("k")
        parts = [str(method)]
        if k is not None:
            parts.append(f"rank {k}")
        bound = self._bound.get(method)
        if bound is not None:
            kind = self.kinds.get(method)
            parts.append(f"{kind} bound {bound}" if kind else f"bound {bound}")
        err = self._error.get(method)
        if err is not None and err[0] == k:
            parts.append(f"{err[1]} wrong entries")
        elapsed = event.get("elapsed")
        if elapsed is not None:
            parts.append(f"{elapsed:.1f}s")
        if event.get("stage") == "end":
            parts.append("done")
        message = event.get("message")
        if message:
            parts.append(str(message))
        return "  ".join(parts)

    def _write(self, event, *, final):
        with self._lock:
            self._write_locked(event, final=final)

    def _write_locked(self, event, *, final):
        line = self.format(event)
        self._wrote = self._clock()
        try:
            stream = self._stream()
            if self._tty:
                width = shutil.get_terminal_size((80, 24)).columns
                if len(line) >= width:
                    line = line[: max(width - 4, 1)] + "..."
                text = f"\r{line}{_CLEAR_EOL}" + ("\n" if final else "")
                self._live = not final
            else:
                text = line + "\n"
            stream.write(text)
            stream.flush()
            self.n_written_ += 1
        except (OSError, ValueError, AttributeError):
            self.quiet = True  # a broken stream must not stop the computation

    def close(self):
        """Stop the heartbeat; end a live terminal line with a newline."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self._live and not self.quiet:
                try:
                    self._stream().write("\n")
                    self._stream().flush()
                except (OSError, ValueError, AttributeError):
                    pass
            self._live = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
