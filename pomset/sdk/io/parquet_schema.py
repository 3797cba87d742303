"""The one schema of a Parquet source's files: their schemas unified by Arrow's promotion
(`pa.unify_schemas(promote_options="permissive")`: int32 + int64 -> int64, int64 + double ->
double, a column some files lack -> null in their rows), checked before any row is read, and
each file's batches cast to it, the values a cast cannot hold found row by row."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..errors import PipelineConstructionError

#: what `ReadFromParquet(schema_mismatch=...)` does with a file whose types do not unify
SCHEMA_MISMATCH = ("fail", "dead_letter")
_SHOWN = 5   # files named for each type in a mismatch error


class SchemaMismatchError(PipelineConstructionError):
    """The files of one Parquet source give a column types that do not unify."""


@dataclass(frozen=True)
class FileSchemas:
    """The unified schema of the columns a source reads (None when no file is readable),
    whether every file is readable with exactly it, and the files
    set aside, with why, under `schema_mismatch='dead_letter'`."""

    schema: Any
    uniform: bool
    rejected: Dict[str, str] = field(default_factory=dict)


def unify_files(name: str, files: List[str], wanted: Optional[List[str]],
                mismatch: str) -> FileSchemas:
    """The files' schemas (their `wanted` columns, all where None) unified in name order. A
    file whose types do not unify with those of the files before it fails the source with a
    `SchemaMismatchError` naming the column and which files give which type, or, with
    `mismatch='dead_letter'`, is set aside. Files that are not Parquet are left to the read,
    which reports each as a malformed record."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    schemas: Dict[str, Any] = {}
    for path in files:
        try:
            whole = pq.read_schema(path).remove_metadata()
        except (pa.ArrowException, OSError):
            continue
        schemas[path] = whole if wanted is None else pa.schema(
            [whole.field(c) for c in wanted if c in whole.names])
    unified, rejected = None, {}
    for path, schema in schemas.items():
        if unified is None:
            unified = schema
            continue
        try:
            unified = pa.unify_schemas([unified, schema], promote_options="permissive")
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            column = _conflict(unified, schema)
            if mismatch == "fail":
                raise SchemaMismatchError(_mismatch_message(name, column, schemas)) from None
            rejected[path] = (f"column {column!r} is {schema.field(column).type} here, which does "
                              f"not unify with {unified.field(column).type}, its type in the "
                              f"files before it")
    if unified is None:
        return FileSchemas(None, False, rejected)
    if wanted is not None:
        unified = pa.schema([unified.field(c) for c in wanted if c in unified.names])
    uniform = (len(schemas) == len(files) and not rejected
               and all(s.equals(unified) for s in schemas.values()))
    return FileSchemas(unified, uniform, rejected)


def _conflict(unified: Any, schema: Any) -> str:
    """The first column whose types in the two schemas do not unify."""
    import pyarrow as pa
    for f in schema:
        if f.name in unified.names:
            try:
                pa.unify_schemas([pa.schema([unified.field(f.name)]), pa.schema([f])],
                                 promote_options="permissive")
            except (pa.ArrowTypeError, pa.ArrowInvalid):
                return f.name
    raise AssertionError("schemas that do not unify have a column that does not")


def _mismatch_message(name: str, column: str, schemas: Dict[str, Any]) -> str:
    by_type: Dict[str, List[str]] = {}
    for path, schema in schemas.items():
        if column in schema.names:
            by_type.setdefault(str(schema.field(column).type), []).append(path)
    kinds = []
    for kind, paths in by_type.items():
        more = f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else ""
        kinds.append(f"{kind} in {', '.join(paths[:_SHOWN])}{more}")
    return (f"{name}: column {column!r} has types that do not unify: {'; '.join(kinds)} (Arrow "
            f"promotes a number to a wider number, not a number to text); rewrite the files "
            f"with one type, leave the column out with columns=, or pass "
            f"schema_mismatch='dead_letter' to send the files that do not fit to dead letters")


def conform_batch(batch: Any, schema: Any) -> Tuple[Any, Dict[int, str]]:
    """A file's record batch as `schema`: each column cast to its unified type (safely: no
    value changes), a column the file lacks all null; and the rows holding a value the cast
    cannot keep ({index in the batch: why}), null in the batch returned."""
    import pyarrow as pa
    import pyarrow.compute as pc
    n, misfits, columns = batch.num_rows, {}, []
    for target in schema:
        i = batch.schema.get_field_index(target.name)
        if i < 0:
            columns.append(pa.nulls(n, target.type))
            continue
        column = batch.column(i)
        if column.type == target.type:
            columns.append(column)
            continue
        try:
            columns.append(pc.cast(column, target.type))
            continue
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        parts = []
        for j in range(n):
            try:
                parts.append(pc.cast(column.slice(j, 1), target.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                misfits.setdefault(j, f"column {target.name!r} value {column[j].as_py()!r} "
                                      f"({column.type}) does not fit {target.type}, the type "
                                      f"the files unify to")
                parts.append(pa.nulls(1, target.type))
        columns.append(pa.concat_arrays(parts))
    return pa.RecordBatch.from_arrays(columns, schema=schema), misfits
