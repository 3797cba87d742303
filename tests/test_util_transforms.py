"""pomset's `transforms.util` (Beam's utility transforms): batching by size, by processing
time and at window end; the batch size estimator's targets; the string transforms; and a
Beam name pomset lacks failing with a message that names it."""
from __future__ import annotations

import pytest

import pomset as beam
from pomset.testing.test_pipeline import TestPipeline
from pomset.testing.util import SortLists, assert_that, equal_to
from pomset.transforms import util, window


def test_group_into_batches_flushes_full_batches_and_the_rest_at_window_end():
    with TestPipeline() as p:
        sizes = (p | beam.Create([("k", i) for i in range(7)] + [("j", 0)])
                 | util.GroupIntoBatches(3)
                 | beam.Map(lambda kv: (kv[0], len(kv[1]))))
        assert_that(sizes, equal_to([("k", 3), ("k", 3), ("k", 1), ("j", 1)]))


def test_group_into_batches_batches_each_window_apart():
    with TestPipeline() as p:
        batches = (p | beam.Create(list(range(6)))
                   | beam.Map(lambda t: window.TimestampedValue(("k", t), t))
                   | beam.WindowInto(window.FixedWindows(3))
                   | util.GroupIntoBatches(10)
                   | beam.Map(lambda kv: sorted(kv[1])))
        assert_that(batches, equal_to([[0, 1, 2], [3, 4, 5]]))


def test_group_into_batches_rejects_a_batch_size_below_one():
    with pytest.raises(ValueError, match="batch_size"):
        util.GroupIntoBatches(0)


def test_the_estimator_grows_twofold_and_stays_within_min_and_max():
    clock = [0.0]
    estimator = util._BatchSizeEstimator(min_batch_size=3, max_batch_size=20,
                                         clock=lambda: clock[0])
    sizes = []
    for _ in range(30):
        sizes.append(estimator.next_batch_size())
        with estimator.record_time(sizes[-1]):
            clock[0] += 1 + 0.001 * sizes[-1]   # a fixed cost: bigger batches pay
    assert sizes[:4] == [3, 6, 12, 20]   # at most twice the last, up to max
    assert min(sizes) >= 3 and max(sizes) <= 20


def test_the_estimator_needs_min_not_above_max():
    with pytest.raises(ValueError, match="Minimum"):
        util._BatchSizeEstimator(min_batch_size=5, max_batch_size=4)


def test_batch_elements_batches_never_exceed_max():
    with TestPipeline() as p:
        sizes = p | beam.Create(list(range(100))) | util.BatchElements(1, 7) | beam.Map(len)
        assert_that(sizes, lambda got: (sum(got) == 100 and max(got) <= 7) or
                    pytest.fail(f"batch sizes {got}"))


def test_regex_and_to_string():
    with TestPipeline() as p:
        words = p | beam.Create(["a1 b22", "c333"])
        assert_that(words | util.Regex.find_all(r"\d+"), equal_to([["1", "22"], ["333"]]),
                    label="find_all")
        assert_that(words | util.Regex.replace_all(r"\d", "#"),
                    equal_to(["a# b##", "c###"]), label="replace_all")
        assert_that(p | "kv" >> beam.Create([("x", 1)]) | util.ToString.Kvs(":"),
                    equal_to(["x:1"]), label="kvs")


def test_group_by_encrypted_key_groups_as_group_by_key_does():
    class FixedSecret(beam.Secret):
        key = beam.Secret.generate_secret_bytes()

        def get_secret_bytes(self) -> bytes:
            return self.key

    with TestPipeline() as p:
        grouped = (p | beam.Create([("a", 1), ("b", 2), ("a", 3)])
                   | beam.GroupByEncryptedKey(FixedSecret())
                   | beam.Map(lambda kv: (kv[0], sorted(kv[1]))))
        assert_that(grouped, equal_to([("a", [1, 3]), ("b", [2])]))


def test_a_beam_name_pomset_lacks_names_itself():
    with pytest.raises(AttributeError, match="apache_beam.NoSuchTransform"):
        beam.NoSuchTransform
    with pytest.raises(AttributeError, match="apache_beam.transforms.util.ReshufflePerKey"):
        util.ReshufflePerKey


def test_group_into_batches_with_sharded_key_keeps_the_key_and_the_batch_size():
    with TestPipeline() as p:
        batches = (p | beam.Create([("a", i) for i in range(10)])
                   | util.GroupIntoBatches.WithShardedKey(5)
                   | beam.Map(lambda kv: (kv[0].key, len(kv[1]))))
        assert_that(batches, lambda got: (all(k == "a" and 0 < n <= 5 for k, n in got)
                                          and sum(n for _, n in got) == 10)
                    or pytest.fail(f"batches {got}"))


def test_stateful_batch_elements_with_length_fn_never_mixes_length_buckets():
    words = ["x" * n for n in (1, 2, 3, 20, 21, 22, 2, 23)]
    with TestPipeline() as p:
        batches = (p | beam.Create(words)
                   | util.BatchElements(min_batch_size=2, max_batch_size=10,
                                        max_batch_duration_secs=100, length_fn=len,
                                        bucket_boundaries=[10])
                   | beam.Map(lambda batch: sorted(len(w) for w in batch)))
        assert_that(batches, lambda got: (all(max(b) < 10 or min(b) >= 10 for b in got)
                                          and sum(len(b) for b in got) == len(words))
                    or pytest.fail(f"batches {got}"))


def test_co_group_by_key_joins_an_iterator_of_pcollections_and_none():
    with TestPipeline() as p:
        a = p | "A" >> beam.Create([("k", 1), ("j", 2)])
        b = p | "B" >> beam.Create([("k", 3)])
        joined = iter([a, b]) | beam.CoGroupByKey() | SortLists
        assert_that(joined, equal_to([("k", ([1], [3])), ("j", ([2], []))]))
        assert_that([] | "None" >> beam.CoGroupByKey(pipeline=p), equal_to([]), label="none")
    with pytest.raises(ValueError, match="pipeline"):
        () | beam.CoGroupByKey()


def test_sort_lists_sorts_the_lists_inside_elements():
    with TestPipeline() as p:
        out = p | beam.Create([("k", {"x": [3, 1], "y": ([2, 0],)})]) | SortLists
        assert_that(out, equal_to([("k", {"x": [1, 3], "y": ([0, 2],)})]))


def test_sort_and_batch_uses_the_windowed_dofn_outside_the_global_window():
    with TestPipeline() as p:
        batches = (p | beam.Create(["ccc", "a", "bb", "dddd"])
                   | beam.Map(lambda s: window.TimestampedValue(s, len(s)))
                   | beam.WindowInto(window.FixedWindows(3))
                   | util.SortAndBatchElements(max_batch_size=10, max_batch_weight=100))
        assert_that(batches, equal_to([["a", "bb"], ["ccc", "dddd"]]))
    dofn = util._WindowAwareSortAndBatchElementsDoFn(1, 10, 3)
    dofn.start_bundle()
    w = window.IntervalWindow(0, 1)
    dofn._buffers[w].extend(["bb", "a", "cc"])
    assert [wv.value for wv in dofn._flush_window(w)] == [["a", "bb"], ["cc"]]


def test_wait_on_passes_its_input_once_the_others_are_complete():
    seen = []
    with TestPipeline(options=beam.PipelineOptions(["--quiet", "--workers=1"])) as p:
        start = p | beam.Create([1, 2])
        first = start | "First" >> beam.Map(lambda x: seen.append(("first", x)) or x)
        then = (start | util.WaitOn(first)
                | "Then" >> beam.Map(lambda x: seen.append(("then", x)) or x))
        assert_that(then, equal_to([1, 2]))
    assert [what for what, _ in seen] == ["first", "first", "then", "then"]
