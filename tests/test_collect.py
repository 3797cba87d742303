"""What a run keeps for `result.collect` (`--collect`, `PCollection.keep()`): by default the
leaves (PCollections no transform reads; a sink reads its input) and the marked ones, so that
a run whose results go to sinks holds none of its data; asking for one not kept is an error
that says how to keep it. On Spark batch only what is read more than once is persisted, so
consecutive Python steps still fuse."""
from __future__ import annotations

import pytest

import pomset as pm
from pomset.runners.local import runner as local_runner


def _pipeline(*flags: str, runner: str = "local") -> pm.Pipeline:
    return pm.Pipeline(options=pm.PipelineOptions([f"--runner={runner}", "--quiet", *flags]))


def _doubled_and_sums(p: pm.Pipeline, path: str):
    """Create -> Double -> CombinePerKey(sum) -> WriteToText; (doubled, sums)."""
    doubled = (p | pm.Create([("a", 1), ("b", 2), ("a", 3)])
               | "Double" >> pm.Map(lambda kv: (kv[0], 2 * kv[1])))
    sums = doubled | "Sum" >> pm.CombinePerKey(sum)
    sums | pm.WriteToText(path, ".txt")
    return doubled, sums


def test_by_default_a_run_keeps_the_leaves_not_what_transforms_or_sinks_read(tmp_path):
    p = _pipeline()
    doubled, sums = _doubled_and_sums(p, str(tmp_path / "sums"))
    keys = doubled | pm.Keys()
    assert p.recorded() == [keys]
    result = p.run()
    assert sorted(wv.value for wv in result.collect(keys)) == ["a", "a", "b"]
    for not_kept, label in [(doubled, "Double"), (sums, "Sum")]:
        with pytest.raises(pm.PipelineConstructionError) as e:
            result.collect(not_kept)
        message = str(e.value)
        assert f"{label!r} was not kept" in message
        assert "--collect=all" in message and ".keep()" in message


def test_a_run_whose_results_all_go_to_sinks_keeps_nothing(tmp_path, monkeypatch):
    records = []
    sequential, parallel = local_runner.SequentialExecutor, local_runner.ParallelExecutor
    monkeypatch.setattr(local_runner, "SequentialExecutor",
                        lambda record: records.append(record) or sequential(record))
    monkeypatch.setattr(local_runner, "ParallelExecutor",
                        lambda record, *a: records.append(record) or parallel(record, *a))
    p = _pipeline()
    _, sums = _doubled_and_sums(p, str(tmp_path / "sums"))
    result = p.run()
    assert records == [{}]   # the run holds no element, however large its input
    assert sorted((tmp_path / "sums-00000-of-00001.txt").read_text().splitlines()) == [
        "('a', 8)", "('b', 4)"]
    with pytest.raises(pm.PipelineConstructionError, match="'Sum' was not kept"):
        result.collect(sums)


def test_dead_letters_nobody_reads_are_kept(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"v": 1}\nnot json\n{"v": 2}\n')
    p = _pipeline()
    good, bad = p | pm.ReadFromJson(str(src)).with_exception_handling()
    good | pm.WriteToJson(str(tmp_path / "out"), ".jsonl")
    assert p.recorded() == [bad]
    (letter,) = [wv.value for wv in p.run().collect(bad)]
    assert isinstance(letter, pm.DeadLetter) and letter.element == "not json"


def test_each_mode_keeps_what_its_flag_says():
    def kept(*flags: str, mark: bool = True) -> list:
        p = _pipeline(*flags)
        doubled = p | "Create" >> pm.Create([("a", 1)]) | "Double" >> pm.Map(lambda kv: kv)
        if mark:
            doubled.keep()
        doubled | "Sum" >> pm.CombinePerKey(sum)
        doubled | "Write" >> pm.WriteToText("unused")
        return [pc.label for pc in p.recorded()]
    assert kept() == kept("--collect=auto") == kept("--collect=leaves") == ["Double", "Sum"]
    assert kept(mark=False) == ["Sum"]
    assert kept("--collect=all", mark=False) == ["Create", "Double", "Sum"]
    assert kept("--collect=none") == []   # the flag wins over marks: nothing at all


def test_keep_returns_the_pcollection_so_a_chain_can_end_in_it():
    p = _pipeline()
    doubled = (p | pm.Create([1]) | pm.Map(lambda x: 2 * x)).keep()
    assert isinstance(doubled, pm.PCollection) and doubled.kept


@pytest.mark.parametrize("runner", ["local", "spark"])
def test_a_marked_intermediate_is_collected(runner, request, tmp_path):
    if runner == "spark":
        request.getfixturevalue("spark_session")
    p = _pipeline(runner=runner)
    doubled, sums = _doubled_and_sums(p, str(tmp_path / "sums"))
    doubled.keep()
    result = p.run()
    assert sorted(wv.value for wv in result.collect(doubled)) == [("a", 2), ("a", 6), ("b", 4)]
    assert sorted((tmp_path / "sums-00000-of-00001.txt").read_text().splitlines()) == [
        "('a', 8)", "('b', 4)"]
    with pytest.raises(pm.PipelineConstructionError, match="'Sum' was not kept"):
        result.collect(sums)


def test_spark_batch_persists_only_what_is_read_more_than_once_and_fuses_the_rest(
        spark_session, tmp_path):
    from pomset.runners.spark.batch import BatchPlan, read_more_than_once

    def plan(*flags: str, mark: bool = False):
        p = _pipeline(*flags, runner="spark")
        evens = (p | "Create" >> pm.Create([pm.TimestampedValue(("a", i), i) for i in range(10)])
                 | "Inc" >> pm.Map(lambda kv: (kv[0], kv[1] + 1))
                 | "Evens" >> pm.Filter(lambda kv: kv[1] % 2 == 0))
        if mark:
            evens.keep()
        out = evens | "Fmt" >> pm.Map(lambda kv: f"{kv[0]}={kv[1]}")
        out | pm.WriteToText(str(tmp_path / "out"))
        reused = read_more_than_once(p, p.recorded())
        built = BatchPlan(spark_session, p)
        built.build(reused)
        return p, built, out, reused

    p, built, out, reused = plan()
    assert not any(reused(pc) for n in p.nodes for pc in n.outputs.values())
    assert built.persisted == []
    text = built.df(out)._jdf.queryExecution().optimizedPlan().toString()
    assert text.count("MapInArrow") == 1, text   # Inc, Evens and Fmt: one task
    assert sorted(wv.value for wv in built.elements(out)) == [f"a={i}" for i in (10, 2, 4, 6, 8)]

    p, built, _, reused = plan(mark=True)   # kept and read by Fmt: persisted, computed once
    assert [n.label for n in p.nodes for pc in n.outputs.values() if reused(pc)] == ["Evens"]
    assert len(built.persisted) == 1
    built.release()

    p, built, _, reused = plan("--collect=all")   # the old default: all but the sink's input
    assert [n.label for n in p.nodes for pc in n.outputs.values() if reused(pc)] == [
        "Create", "Inc", "Evens", "Fmt"]
    built.release()
