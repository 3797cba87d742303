"""Bounded reads on every runner: a source's elements in bundles, and its malformed records as
dead letters (each counted and sent to the source's dead-letter output, or failing the run
naming the record when it has none). Where the source carries a `meter` (a runner showing
progress put it there), each file's begin and end are marked on it."""
from __future__ import annotations

from typing import Any, Iterator, List, Optional, Sequence, Tuple

from ..windowing import WindowedValue

Tagged = Tuple[Optional[str], List[WindowedValue]]


def read_bundles(source: Any, label: str, size: int,
                 paths: Optional[Sequence[str]] = None) -> Iterator[Tagged]:
    """(tag, elements) as a file source reads `paths` (default: all its files): bundles of
    up to `size` elements (tag None), and after each bundle, and at the end, the dead letters
    read since the last (the source's dead-letter tag)."""
    dead_tag, meter = source.dead_letter_tag, source.meter
    dead: List[WindowedValue] = []
    on_bad = source.dead_letters(label, dead)
    bundle: List[WindowedValue] = []
    for path in source.files() if paths is None else paths:
        if meter is not None:
            meter.begin(path)
        for wv in source.read_file(path, on_bad):
            bundle.append(wv)
            if len(bundle) >= size:
                yield None, bundle
                bundle = []
                if dead:   # the file's reader keeps `on_bad`, which fills this list
                    yield dead_tag, list(dead)
                    dead.clear()
        if meter is not None:
            meter.end()
    if bundle:
        yield None, bundle
    if dead:
        yield dead_tag, dead


def read_tagged(source: Any, label: str, size: int, column_rows: int,
                paths: Optional[Sequence[str]] = None) -> Iterator[Tuple[Optional[str], Any]]:
    """(tag, bundle) as a file source reads `paths` (default: all its files): `Columns` of up
    to `column_rows` rows where the runtime reads it as columns (`columnar.reads_columns`),
    else elements (`read_bundles`); dead letters as elements, tagged as `read_bundles` tags
    them."""
    from .columnar import read_columns, reads_columns
    if not reads_columns(source):
        yield from read_bundles(source, label, size, paths)
        return
    dead: List[WindowedValue] = []
    on_bad, meter = source.dead_letters(label, dead), source.meter
    for path in source.files() if paths is None else paths:
        if meter is not None:
            meter.begin(path)
        for bundle in read_columns(source, [path], on_bad, column_rows):
            if dead:
                yield source.dead_letter_tag, list(dead)
                dead.clear()
            yield None, bundle
        if meter is not None:
            meter.end()
    if dead:
        yield source.dead_letter_tag, dead
