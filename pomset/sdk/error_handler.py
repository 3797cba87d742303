"""Beam's ErrorHandler (`apache_beam.transforms.error_handling`): the dead letters of any
number of transforms (`with_exception_handling(error_handler=...)`, `with_error_handler`)
gathered into one PCollection and handed to one consumer transform, that writes or logs
them, so the main chain reads as if nothing failed:

    with ErrorHandler(WriteToText("errors")) as handler:
        good = pcoll | Map(parse).with_error_handler(handler)
"""
from __future__ import annotations

from typing import Any, List, Optional

from .errors import PipelineConstructionError
from .ptransform import PTransform
from .pvalue import PCollection


class ErrorHandler:
    """Gathers error PCollections (`add_error_pcollection`) and, when closed (at the end of
    its `with` block), applies `consumer` to them flattened; `output()` is what it gave.
    One closed with no errors added applies nothing."""

    def __init__(self, consumer: PTransform) -> None:
        self._consumer = consumer
        self._pcolls: List[PCollection] = []
        self._closed = False
        self._output: Any = None

    def __enter__(self) -> "ErrorHandler":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()

    def add_error_pcollection(self, pcoll: PCollection) -> None:
        """Hand `pcoll`'s error records to this handler."""
        if self._closed:
            raise PipelineConstructionError("this ErrorHandler is closed: add its errors "
                                            "inside its `with` block")
        self._pcolls.append(pcoll)

    def close(self) -> None:
        """Applies the consumer to the errors gathered (once)."""
        if self._closed:
            raise PipelineConstructionError("this ErrorHandler is closed already")
        self._closed = True
        if not self._pcolls:
            return
        from .core import Flatten
        errors = (self._pcolls[0] if len(self._pcolls) == 1
                  else tuple(self._pcolls) | "FlattenErrors" >> Flatten())
        self._output = errors | self._consumer

    def output(self) -> Optional[Any]:
        """What the consumer gave (None when no errors were added)."""
        if not self._closed:
            raise PipelineConstructionError("an ErrorHandler's output exists once it is "
                                            "closed, after its `with` block")
        return self._output
