"""Input that is wrong as a whole: a file that cannot be read at all (`CorruptInputError`),
a CSV read with the wrong delimiter, on the local and Spark runners."""
from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pomset as pm


def run(source, runner="local"):
    p = pm.Pipeline(runner=runner)
    out = p | source
    result = p.run()
    return [wv.value for wv in result.collect(out)]


def truncated_parquet(path):
    pq.write_table(pa.table({"v": list(range(100))}), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_corrupt_input_error_is_exported_and_not_user_code():
    assert issubclass(pm.CorruptInputError, RuntimeError)
    assert not issubclass(pm.CorruptInputError, pm.UserCodeError)


def test_truncated_parquet_is_a_corrupt_input_error_naming_the_file(tmp_path):
    truncated_parquet(tmp_path / "cut.parquet")
    with pytest.raises(pm.CorruptInputError, match=r"cut\.parquet: not a readable Parquet"):
        run(pm.ReadFromParquet(str(tmp_path / "cut.parquet")))


def damaged_parquet(path):
    """A Parquet file whose footer reads but whose second row group's page header is garbage."""
    pq.write_table(pa.table({"v": list(range(10_000))}), path, row_group_size=5_000,
                   compression="none")
    start = pq.read_metadata(path).row_group(1).column(0).data_page_offset
    data = bytearray(path.read_bytes())
    data[start:start + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))


def test_parquet_damaged_past_its_footer_names_the_rows_read(tmp_path):
    damaged_parquet(tmp_path / "d.parquet")
    with pytest.raises(pm.CorruptInputError, match=r"d\.parquet: damaged after row \d+: "):
        run(pm.ReadFromParquet(str(tmp_path / "d.parquet")))


@pytest.mark.parametrize("source", [pm.ReadFromText, pm.ReadFromJson, pm.ReadFromCsv])
def test_gzip_where_text_is_expected_is_a_corrupt_input_error(tmp_path, source):
    path = tmp_path / "rows.txt.gz"
    path.write_bytes(gzip.compress(b'{"a": 1}\n{"a": 2}\n'))
    with pytest.raises(pm.CorruptInputError,
                       match=r"rows\.txt\.gz: is gzip-compressed data .*decompress it"):
        run(source(str(path)))


def test_binary_data_read_as_text_names_the_offset(tmp_path):
    path = tmp_path / "utf16.txt"
    path.write_bytes("hello\n".encode("utf-16-le"))
    with pytest.raises(pm.CorruptInputError, match=r"utf16\.txt: is not text: a NUL byte at "
                                                   r"offset 1"):
        run(pm.ReadFromText(str(path)))


def test_one_json_document_is_not_json_lines(tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps([{"a": 1}, {"a": 2}], indent=2))
    with pytest.raises(pm.CorruptInputError,
                       match=r"doc\.json: is one JSON list over 8 lines, not JSON lines"):
        run(pm.ReadFromJson(str(path)))


def test_malformed_records_stay_user_code_errors_and_dead_letters(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"a": 1}\nnot json\n')
    with pytest.raises(pm.UserCodeError, match=r"a\.jsonl:2: invalid JSON"):
        run(pm.ReadFromJson(str(tmp_path / "a.jsonl")))


def test_a_corrupt_file_is_one_dead_letter_with_exception_handling(tmp_path):
    pq.write_table(pa.table({"v": [1, 2]}), tmp_path / "a.parquet")
    truncated_parquet(tmp_path / "b.parquet")
    p = pm.Pipeline(runner="local")
    good, bad = p | pm.ReadFromParquet(str(tmp_path / "*.parquet")).with_exception_handling()
    result = p.run()
    assert sorted(wv.value["v"] for wv in result.collect(good)) == [1, 2]
    [letter] = [wv.value for wv in result.collect(bad)]
    assert letter.element == str(tmp_path / "b.parquet")
    assert "not a readable Parquet file" in letter.error


def test_spark_reports_a_corrupt_file_as_corrupt_input(tmp_path, spark_session):
    pq.write_table(pa.table({"v": [1, 2]}), tmp_path / "a.parquet")
    truncated_parquet(tmp_path / "b.parquet")
    with pytest.raises(pm.CorruptInputError, match=r"b\.parquet: not a readable Parquet"):
        run(pm.ReadFromParquet(str(tmp_path / "*.parquet")), runner="spark")
    damaged_parquet(tmp_path / "d.parquet")   # its footer reads: Spark reads it natively
    with pytest.raises(pm.CorruptInputError, match=r"Spark could not read .*d\.parquet: it is "
                                                   r"damaged or not Parquet \(\w+: "):
        run(pm.ReadFromParquet(str(tmp_path / "d.parquet")), runner="spark")


@pytest.mark.parametrize("delimiter", [";", "\t", "|"])
def test_a_csv_with_another_delimiter_is_an_error_naming_it(tmp_path, delimiter):
    path = tmp_path / "visits.csv"
    path.write_text(delimiter.join(["user", "page", "ts"]) + "\n"
                    + delimiter.join(["ann", "/a", "1"]) + "\n")
    header = delimiter.join(["user", "page", "ts"])
    with pytest.raises(pm.PipelineConstructionError) as error:
        pm.Pipeline(runner="local") | pm.ReadFromCsv(str(path))
    assert str(error.value) == (f"ReadFromCsv: {path}: the header {header!r} is one column "
                                f"with the delimiter ',' but 3 columns with {delimiter!r}: "
                                f"pass delimiter={delimiter!r} to ReadFromCsv")
    assert run(pm.ReadFromCsv(str(path), delimiter=delimiter)) == [
        {"user": "ann", "page": "/a", "ts": 1}]


def test_one_column_csvs_are_read_as_they_are(tmp_path):
    (tmp_path / "a.csv").write_text("note\nsee a;b\nplain\n")       # the header has no ';'
    (tmp_path / "b.csv").write_text("x;y\nonly one\n")              # the next line does not split
    assert run(pm.ReadFromCsv(str(tmp_path / "a.csv"))) == [{"note": "see a;b"},
                                                           {"note": "plain"}]
    assert run(pm.ReadFromCsv(str(tmp_path / "b.csv"))) == [{"x;y": "only one"}]


def test_a_later_file_with_another_delimiter_fails_the_spark_pipeline_too(tmp_path):
    (tmp_path / "a.csv").write_text("user,page\nann,/a\n")
    (tmp_path / "b.csv").write_text("user|page\nbob|/b\n")
    with pytest.raises(pm.PipelineConstructionError, match=r"b\.csv: the header 'user\|page' "
                                                           r".*pass delimiter='\|'"):
        pm.Pipeline(runner="spark") | pm.ReadFromCsv(str(tmp_path / "*.csv"))


def test_a_file_that_appears_after_the_pipeline_is_built_is_checked_when_read(tmp_path):
    (tmp_path / "a.csv").write_text("user,page\nann,/a\n")
    p = pm.Pipeline(runner="local")
    p | pm.ReadFromCsv(str(tmp_path / "*.csv"))
    (tmp_path / "b.csv").write_text("user;page\nbob;/b\n")
    with pytest.raises(pm.PipelineConstructionError, match=r"b\.csv: the header 'user;page'"):
        p.run()
