"""ReadFromCsv loses and changes nothing silently: a column's type is decided once and a
value that does not fit makes its row a dead letter (the column keeps its type), text that
looks like a number but would change as one stays text, a field not in the file's encoding
spoils only its row; delimiter, encoding and header options; the same on Spark."""
from __future__ import annotations

import datetime as dt

import pytest

import pomset as pm
from conftest import runner_flags


def read(path, runner="local", **options):
    """(rows, dead letters as (line, message)) of one ReadFromCsv with dead letters kept."""
    p = pm.Pipeline(options=pm.PipelineOptions(runner_flags(runner) + ["--quiet"]))
    good, bad = p | pm.ReadFromCsv(str(path), **options).with_exception_handling()
    result = p.run()
    letters = [wv.value for wv in result.collect(bad)]
    return ([wv.value for wv in result.collect(good)],
            [(d.error.split(": ", 1)[0].rsplit(":", 1)[-1], d.error.split(": ", 1)[1])
             for d in letters])


def test_rows_without_a_schema_are_rows_and_dicts(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("user,page,n\nann,/a,1\nbob,/b,2\n")
    for options in ({}, {"timestamp_field": "n"}):
        rows, _ = read(path, **options)
        assert rows == [{"user": "ann", "page": "/a", "n": 1},
                        {"user": "bob", "page": "/b", "n": 2}]
        assert all(isinstance(row, pm.Row) and isinstance(row, dict) for row in rows)
        assert [row.user for row in rows] == ["ann", "bob"]
        assert [row["page"] for row in rows] == ["/a", "/b"]


def test_a_byte_not_in_the_encoding_spoils_its_row_not_its_column(tmp_path):
    path = tmp_path / "cities.csv"
    path.write_bytes(b"city,n\nParis,1\nZ\xfcrich,2\nParis,3\n")
    p = pm.Pipeline(runner="local")
    good, bad = p | pm.ReadFromCsv(str(path)).with_exception_handling()
    paris = good | pm.Filter(lambda row: row["city"] == "Paris")
    result = p.run()
    assert [wv.value for wv in result.collect(paris)] == [{"city": "Paris", "n": 1},
                                                          {"city": "Paris", "n": 3}]
    [letter] = [wv.value for wv in result.collect(bad)]
    assert letter.error.startswith(f"{path}:3: column 'city' is not UTF-8: b'Z\\xfcrich'")
    assert "encoding=" in letter.error
    assert result.counter("dead_lettered") == 1
    rows, letters = read(path, encoding="latin-1")      # the file's real encoding
    assert rows == [{"city": "Paris", "n": 1}, {"city": "Zürich", "n": 2},
                    {"city": "Paris", "n": 3}] and letters == []


def test_text_that_would_change_as_a_number_stays_text(tmp_path):
    path = tmp_path / "zips.csv"
    path.write_text("zip,n,x,flag\n01234,1,1.50,TRUE\n75001,2,2,false\n00100,3,1e3,true\n")
    rows, letters = read(path)
    assert letters == []
    assert rows == [{"zip": "01234", "n": 1, "x": 1.5, "flag": True},
                    {"zip": "75001", "n": 2, "x": 2.0, "flag": False},
                    {"zip": "00100", "n": 3, "x": 1000.0, "flag": True}]


def test_one_bad_value_is_a_dead_letter_and_the_column_keeps_its_type(tmp_path):
    path = tmp_path / "big.csv"
    lines = [f"k{i},{i}" for i in range(3000)]
    lines[10] = "k10,n/a"                    # in the rows that decide the type
    lines[2500] = "k2500,12x"                # after them
    path.write_text("key,value\n" + "\n".join(lines) + "\n")
    rows, letters = read(path)
    assert len(rows) == 2998 and all(isinstance(r["value"], int) for r in rows)
    assert letters == [("12", "column 'value' holds int64 values; 'n/a' is not one"),
                       ("2502", "column 'value' holds int64 values; '12x' is not one")]


def test_a_column_of_mixed_values_is_text(tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_text("id,code\n1,7\n2,x\n3,9\n4,\n")
    rows, letters = read(path)
    assert letters == []
    assert rows == [{"id": 1, "code": "7"}, {"id": 2, "code": "x"}, {"id": 3, "code": "9"},
                    {"id": 4, "code": ""}]


def test_every_file_gets_the_first_files_types(tmp_path):
    (tmp_path / "a.csv").write_text("id,v\n1,10\n2,20\n")
    (tmp_path / "b.csv").write_text("id,v\n3,thirty\n4,40\n")
    rows, letters = read(tmp_path / "*.csv")
    assert rows == [{"id": 1, "v": 10}, {"id": 2, "v": 20}, {"id": 4, "v": 40}]
    assert letters == [("2", "column 'v' holds int64 values; 'thirty' is not one")]


def test_empty_fields_dates_and_timestamps(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("day,at,local,n\n2024-05-06,2024-05-06T07:08:09Z,2024-05-06 07:08,\n"
                    "2024-05-07,2024-05-07T00:00:00+02:00,2024-05-07 10:00:30,4\n")
    rows, letters = read(path)
    utc = dt.timezone.utc
    assert letters == []
    assert rows == [
        {"day": dt.date(2024, 5, 6), "at": dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=utc),
         "local": dt.datetime(2024, 5, 6, 7, 8), "n": None},
        {"day": dt.date(2024, 5, 7), "at": dt.datetime(2024, 5, 6, 22, 0, tzinfo=utc),
         "local": dt.datetime(2024, 5, 7, 10, 0, 30), "n": 4}]


def test_declared_column_types(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("zip,n,when\n75001,1,2024-05-06\n75002,x,2024-05-07\n")
    rows, letters = read(path, column_types={"zip": str, "n": float, "when": "timestamp"})
    assert rows == [{"zip": "75001", "n": 1.0, "when": dt.datetime(2024, 5, 6)}]
    assert letters == [("3", "column 'n' holds float64 values; 'x' is not one")]
    with pytest.raises(TypeError, match="column_types maps column names"):
        pm.ReadFromCsv(str(path), column_types={"n": list})


def test_delimiter_encoding_and_header_options(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_bytes("# exported 2024-05-06\n# by a tool\nville;n\nZürich;1\nGenève;2\n"
                     .encode("cp1252"))
    rows, _ = read(path, delimiter=";", encoding="cp1252", skip_header_lines=2)
    assert rows == [{"ville": "Zürich", "n": 1}, {"ville": "Genève", "n": 2}]
    rows, _ = read(path, delimiter=";", encoding="cp1252", skip_header_lines=2,
                   column_names=["city", "count"])
    assert rows == [{"city": "Zürich", "count": 1}, {"city": "Genève", "count": 2}]
    bare = tmp_path / "bare.tsv"
    bare.write_text("a\t1\nb\t2\nc\tx\n")
    rows, letters = read(bare, delimiter="\t", header=False, column_names=["k", "v"])
    assert rows == [{"k": "a", "v": "1"}, {"k": "b", "v": "2"}, {"k": "c", "v": "x"}]
    rows, letters = read(bare, delimiter="\t", header=False)
    assert rows[0] == {"f0": "a", "f1": "1"} and letters == []


def test_line_numbers_count_the_skipped_lines(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("title\n\nid,v\n1,2\n3\n4,5\n")
    rows, letters = read(path, skip_header_lines=2)
    assert rows == [{"id": 1, "v": 2}, {"id": 4, "v": 5}]
    assert letters == [("5", "expected 2 fields (as in the header), got 1")]


def test_column_names_that_do_not_fit_the_file_are_a_dead_letter(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("a,b,c\n1,2,3\n")
    p = pm.Pipeline(runner="local")
    good, bad = p | pm.ReadFromCsv(str(path), column_names=["x", "y"]
                                   ).with_exception_handling()
    result = p.run()
    [letter] = [wv.value for wv in result.collect(bad)]
    assert "has 3 columns, column_names names 2" in letter.error
    assert result.collect(good) == []


@pytest.mark.parametrize("bad, message", [
    ({"delimiter": ";;"}, "delimiter must be one character"),
    ({"delimiter": '"'}, "delimiter must be one character"),
    ({"encoding": "klingon"}, "encoding 'klingon' is not one Python knows"),
    ({"skip_header_lines": -1}, "skip_header_lines must be 0 or more"),
])
def test_bad_options_are_named(tmp_path, bad, message):
    (tmp_path / "x.csv").write_text("a\n1\n")
    with pytest.raises(ValueError, match=message):
        pm.ReadFromCsv(str(tmp_path / "x.csv"), **bad)


def test_spark_reads_the_same_rows_and_dead_letters(tmp_path, spark_session):
    (tmp_path / "a.csv").write_bytes(b"city,zip,n\nParis,01234,1\nZ\xfcrich,8001,2\n")
    (tmp_path / "b.csv").write_text("city,zip,n\nRome,00100,x\nOslo,0150,4\n")
    want = read(tmp_path / "*.csv")
    got = read(tmp_path / "*.csv", runner="spark")
    assert sorted(got[0], key=str) == sorted(want[0], key=str)
    assert sorted(got[1]) == sorted(want[1])
    assert want[0] == [{"city": "Paris", "zip": "01234", "n": 1},
                       {"city": "Oslo", "zip": "0150", "n": 4}]
    assert len(want[1]) == 2
    assert all(isinstance(row, pm.Row) for row in want[0] + got[0])
    assert [row.city for row in got[0]] == [row["city"] for row in got[0]]
