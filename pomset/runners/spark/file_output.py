"""Writing the elements a run brought to the driver to a file sink, batch and streaming alike."""
from __future__ import annotations

from typing import Any, List

from .batch import BATCH_ROWS


def write_file(writer: Any, elements: List[Any]) -> None:
    """Write elements to a file sink's writer, which leaves no file if this fails."""
    try:
        for i in range(0, len(elements), BATCH_ROWS):
            writer.write(elements[i:i + BATCH_ROWS])
    except BaseException:
        writer.abort()
        raise
    writer.close()
