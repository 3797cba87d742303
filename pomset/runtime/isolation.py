"""The calls of a ParDo with exception handling that run apart from the worker's thread
(`with_exception_handling(timeout=, use_subprocess=)`): on a thread of their own, waited for
at most `timeout` seconds (a call still running then is left to finish, its result dropped),
or in a subprocess forked from the worker, which a crash (a segfault, `os._exit`) or a
timeout ends without ending the worker: the call fails, and the next one starts a fresh
subprocess. Either way what the call returns is materialized where it ran (a generator
cannot be waited for, nor cross back), and the failure is the element's, which the
DoFnRunner sends to the dead-letter output."""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import queue
import threading
import traceback
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Optional, Tuple

from ..sdk.exception_handling import ExceptionHandling
from ..sdk.user_metrics import MetricsContainer, enter

Invoke = Callable[[Any, Any, tuple, dict], Any]
# a process, flat-map or filter function's result that is one output, not outputs
_ONE = (str, bytes, dict)


def _materialized(r: Any, many: bool) -> Any:
    """`r`, a call's result, with its outputs in a list where it has several (`many`)."""
    if many and r is not None and not isinstance(r, _ONE):
        return list(r)
    return r


def isolate(handling: ExceptionHandling, invoke: Invoke, dofn: Optional[Any], label: str,
            many: bool, metrics: Callable[[], MetricsContainer]) -> Tuple[Invoke, Any]:
    """The (invoke, DoFn lifecycle) a DoFnRunner uses in place of `invoke` and `dofn` (None
    for a function): in a subprocess where `handling.use_subprocess`, else on a thread
    bounded by `handling.timeout`. `many`: the call returns outputs, not one output;
    `metrics()`, the container the call's user metrics go to (on a thread)."""
    if handling.use_subprocess:
        child = Subprocess(invoke, dofn, label, many, handling.timeout)
        return child.invoke, child
    timed = TimedCalls(invoke, dofn, label, many, handling.timeout, metrics)
    return timed.invoke, timed


class _Worker(threading.Thread):
    """A daemon thread running the calls handed to it in turn, until told to stop."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.tasks: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> "concurrent.futures.Future[Any]":
        future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        self.tasks.put((future, fn, args))
        return future

    def stop(self) -> None:
        """Ends the thread once the call it runs, if any, returns."""
        self.tasks.put(None)

    def run(self) -> None:
        while True:
            task = self.tasks.get()
            if task is None:
                return
            future, fn, args = task
            try:
                future.set_result(fn(*args))
            except BaseException as e:
                future.set_exception(e)


class TimedCalls:
    """Calls on a thread, waited for at most `timeout` seconds: past it, the call fails with
    a `TimeoutError` and the thread is left to finish it (a thread cannot be stopped), a new
    one taking the next calls. The DoFn's lifecycle methods run in the worker's thread."""

    def __init__(self, invoke: Invoke, dofn: Optional[Any], label: str, many: bool,
                 timeout: Optional[float], metrics: Callable[[], MetricsContainer]) -> None:
        self.call, self.dofn, self.label, self.many = invoke, dofn, label, many
        self.timeout, self.metrics = timeout, metrics
        self.worker: Optional[_Worker] = None

    def _run(self, container: MetricsContainer, value: Any, wv: Any, args: tuple,
             kwargs: dict) -> Any:
        prev = enter(container)
        try:
            return _materialized(self.call(value, wv, args, kwargs), self.many)
        finally:
            enter(prev)

    def invoke(self, value: Any, wv: Any, args: tuple, kwargs: dict) -> Any:
        """The call, on the thread; a TimeoutError when it takes longer than the timeout."""
        if self.worker is None:
            self.worker = _Worker(f"{self.label} (timed calls)")
        future = self.worker.submit(self._run, self.metrics(), value, wv, args, kwargs)
        done, _ = concurrent.futures.wait([future], self.timeout)
        if not done:
            self.worker.stop()
            self.worker = None
            raise TimeoutError()
        return future.result()

    def setup(self) -> None:
        if self.dofn is not None:
            self.dofn.setup()

    def start_bundle(self) -> None:
        if self.dofn is not None:
            self.dofn.start_bundle()

    def finish_bundle(self) -> Any:
        return self.dofn.finish_bundle() if self.dofn is not None else None

    def teardown(self) -> None:
        try:
            if self.dofn is not None:
                self.dofn.teardown()
        finally:
            if self.worker is not None:
                self.worker.stop()
                self.worker = None


class SubprocessTraceback(Exception):
    """The traceback, in the subprocess, of an error a call raised there (the cause of the
    error raised in the worker)."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return f"\n\"\"\"\n{self.tb}\"\"\""


def _serve(conn: Any, invoke: Invoke, dofn: Optional[Any], many: bool) -> None:
    """The subprocess: the calls the worker sends on `conn`, answered in turn. The DoFn (the
    worker's, as it was when the subprocess was forked) is set up and its bundle started
    before the first element; `finish` finishes the bundle, `teardown` ends the process."""
    set_up = started = False
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        op = request[0]
        try:
            if op == "process":
                if dofn is not None and not set_up:
                    dofn.setup()
                    set_up = True
                if dofn is not None and not started:
                    dofn.start_bundle()
                    started = True
                reply: Tuple[bool, Any] = (True, _materialized(invoke(*request[1:]), many))
            elif op == "finish":
                finished = None
                if started:
                    started = False
                    finished = _materialized(dofn.finish_bundle(), True)
                reply = (True, finished)
            else:   # teardown
                if set_up:
                    dofn.teardown()
                conn.send((True, None))
                return
        except Exception as e:
            reply = (False, (e, traceback.format_exc()))
        try:
            conn.send(reply)
        except Exception as e:   # what it returned or raised cannot be pickled
            conn.send((False, (RuntimeError(f"the subprocess's answer cannot be sent back to "
                                            f"the worker: {type(e).__name__}: {e}"),
                               traceback.format_exc())))


class Subprocess:
    """Calls in a subprocess forked from the worker (so the DoFn, its arguments and side
    inputs need no pickling; the elements and results do), started at the first call and
    again after a crash or a timeout, which kill it. A crash fails the call with a
    `BrokenProcessPool`, a timeout with a `TimeoutError`. The DoFn's lifecycle runs there:
    setup and start_bundle before its first element, finish_bundle (whose outputs come
    back) and teardown when the worker's are called; its state, and its user metrics, stay
    there."""

    def __init__(self, invoke: Invoke, dofn: Optional[Any], label: str, many: bool,
                 timeout: Optional[float]) -> None:
        self.call, self.dofn, self.label, self.many, self.timeout = (invoke, dofn, label, many,
                                                                      timeout)
        self.process: Any = None
        self.conn: Any = None

    def _start(self) -> None:
        context = multiprocessing.get_context("fork")
        mine, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs, self.call, self.dofn, self.many),
                                  name=f"{self.label} (subprocess)", daemon=True)
        process.start()
        theirs.close()
        self.process, self.conn = process, mine

    def _stop(self) -> Optional[int]:
        """Kills the subprocess; its exit code."""
        process, conn = self.process, self.conn
        self.process = self.conn = None
        if process is None:
            return None
        if process.is_alive():
            process.kill()
        process.join(5)
        conn.close()
        return process.exitcode

    def _ask(self, request: tuple, timeout: Optional[float]) -> Any:
        if self.process is None:
            self._start()
        try:
            self.conn.send(request)
            answered = self.conn.poll(timeout)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            answered = True   # it has gone: recv says how
        if not answered:
            self._stop()
            raise TimeoutError()
        try:
            ok, payload = self.conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            code = self._stop()
            raise BrokenProcessPool(f"{self.label}: the subprocess running it exited "
                                    f"(exit code {code}) while processing") from None
        if ok:
            return payload
        error, tb = payload
        error.__cause__ = SubprocessTraceback(tb)
        raise error

    def invoke(self, value: Any, wv: Any, args: tuple, kwargs: dict) -> Any:
        """The call, in the subprocess (started first, if none runs)."""
        return self._ask(("process", value, wv, args, kwargs), self.timeout)

    def setup(self) -> None:
        """Nothing here: the subprocess sets the DoFn up before its first element."""

    def start_bundle(self) -> None:
        """Nothing here: the subprocess starts the bundle before its first element."""

    def finish_bundle(self) -> Any:
        if self.process is None:
            return None
        return self._ask(("finish",), None)

    def teardown(self) -> None:
        if self.process is None:
            return
        try:
            self._ask(("teardown",), None)
        finally:
            self._stop()
