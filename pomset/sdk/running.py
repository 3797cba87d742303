"""A pipeline running in the background (`Pipeline.start()`): wait for its result, and change
what a runner lets change while it runs (the instance count of an `OPlus` step)."""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from .errors import PipelineConstructionError


class Controls:
    """Requests made to a run from outside it. A runner that can take them `attach`es a
    handler per step; requests made before the run got that far wait for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handlers: Optional[Dict[str, Callable[[int], None]]] = None
        self._waiting: List[Tuple[str, int]] = []

    def __reduce__(self) -> tuple:
        """A copy of the pipeline (shipped to Spark's workers) takes no requests: a fresh one."""
        return Controls, ()

    def attach(self, handlers: Dict[str, Callable[[int], None]]) -> None:
        """The run can take requests now: `handlers[step](n)` sets a step's parallelism."""
        with self._lock:
            self._handlers = handlers
            waiting, self._waiting = self._waiting, []
        for step, n in waiting:
            handlers[step](n)

    def set_parallelism(self, step: str, n: int) -> None:
        with self._lock:
            if self._handlers is None:
                self._waiting.append((step, n))
                return
            handler = self._handlers[step]
        handler(n)


class RunningPipeline:
    """A run on a background thread: `set_parallelism`, `wait_until_finish`, `done`."""

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline
        self._result: Any = None
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, name="pomset-run", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self.pipeline.run()
        except BaseException as e:
            self._error = e

    def set_parallelism(self, step: str, n: int) -> None:
        """Run OPlus step `step` with `n` instances from the first watermark past the current
        one; no state moves. The local runner supports it (up to the step's
        max_parallelism); others fix the parallelism when the run starts."""
        nodes = {node.label: node for node in self.pipeline.nodes}
        node = nodes.get(step)
        if node is None or not _elastic(node):
            steps = sorted(label for label, nd in nodes.items() if _elastic(nd))
            raise PipelineConstructionError(
                f"set_parallelism: {step!r} is not an OPlus step of this pipeline; its OPlus "
                f"steps are {steps or 'none'}")
        runner = self.pipeline.options.runner
        if runner != "local":
            raise PipelineConstructionError(
                f"set_parallelism: the {runner} runner deploys OPlus shared-nothing, with the "
                f"parallelism fixed when the run starts; the local runner changes it while "
                f"running")
        most = node.transform.most_instances
        if not isinstance(n, int) or not 1 <= n <= most:
            raise ValueError(f"set_parallelism: {step!r} takes 1 to {most} instances (its "
                             f"max_parallelism), got {n!r}")
        self.pipeline.controls.set_parallelism(step, n)

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait_until_finish(self, timeout: Optional[float] = None) -> Any:
        """The run's result once it has finished (its error, raised, if it failed); None if
        `timeout` seconds pass first."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            return None
        if self._error is not None:
            raise self._error
        return self._result


def _elastic(node: Any) -> bool:
    """Whether a step's parallelism may change while it runs (an OPlus step)."""
    return getattr(node.transform, "elastic", False)
