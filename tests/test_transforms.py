"""What is computed: element-wise transforms and DoFns, side inputs, multi-output, grouping,
combining and the composites, the built-in combiners, the fluent API and labels."""
from __future__ import annotations

import datetime as dt
import math

import pytest

import pomset as pm

TV = pm.TimestampedValue
GW = pm.GlobalWindow()


def iw(s, e):
    return pm.IntervalWindow(s, e)


def run(build, argv=None):
    """build(p) -> pcoll or tuple of pcolls; returns (result, values or tuple of value lists)."""
    p = pm.Pipeline(runner="local", argv=argv)
    out = build(p)
    result = p.run()
    if isinstance(out, (tuple, list)):
        return result, tuple(values(result.collect(o)) for o in out)
    return result, values(result.collect(out))


def values(panes):
    return [wv.value for wv in panes]


# --- element-wise ---------------------------------------------------------------------------------

class TestElementWise:
    def test_map_flat_map_filter(self):
        _, (m, f, fl) = run(lambda p: (
            (src := p | pm.Create([1, 2, 3, 4])) | pm.Map(lambda x: x * x),
            src | pm.FlatMap(lambda x: [x] * (x % 3)),
            src | pm.Filter(lambda x: x % 2 == 0)))
        assert m == [1, 4, 9, 16]
        assert f == [1, 2, 2, 4]
        assert fl == [2, 4]

    def test_extra_arguments(self):
        _, (a, b, c) = run(lambda p: (
            (src := p | pm.Create([1, 2])) | pm.Map(lambda x, k, scale=1: (k, x * scale), "key", scale=10),
            src | pm.FlatMap(lambda x, n: range(x, x + n), 2),
            src | pm.Filter(lambda x, limit: x > limit, 1)))
        assert a == [("key", 10), ("key", 20)]
        assert b == [1, 2, 2, 3]
        assert c == [2]

    def test_flat_map_of_generator_and_none(self):
        def gen(x):
            for i in range(x):
                yield (x, i)
        _, out = run(lambda p: p | pm.Create([0, 2]) | pm.FlatMap(gen))
        assert out == [(2, 0), (2, 1)]

    def test_elements_keep_timestamp_and_window(self):
        p = pm.Pipeline(runner="local")
        out = (p | pm.Create([TV(5, 12), TV(7, 25)]) | pm.WindowInto(pm.FixedWindows(10))
               | pm.Map(lambda x: x + 1))
        panes = p.run().collect(out)
        assert [(wv.value, wv.timestamp, wv.window) for wv in panes] == [
            (6, pm.Timestamp(12), iw(10, 20)), (8, pm.Timestamp(25), iw(20, 30))]

    def test_timestamped_value_outputs_set_event_time(self):
        p = pm.Pipeline(runner="local")
        src = p | pm.Create([("a", 5), ("b", 15)])
        stamped = (src | pm.Map(lambda kv: TV(kv, kv[1]))).keep()
        flat = src | pm.FlatMap(lambda kv: [TV(kv[0], kv[1]), TV(kv[0], kv[1] + 100)])
        windowed = stamped | pm.WindowInto(pm.FixedWindows(10)) | pm.GroupByKey()
        result = p.run()
        assert [(wv.value, int(wv.timestamp)) for wv in result.collect(stamped)] == [
            (("a", 5), 5), (("b", 15), 15)]
        assert [(wv.value, int(wv.timestamp)) for wv in result.collect(flat)] == [
            ("a", 5), ("a", 105), ("b", 15), ("b", 115)]
        assert sorted((wv.value, wv.window) for wv in result.collect(windowed)) == [
            (("a", [5]), iw(0, 10)), (("b", [15]), iw(10, 20))]

    def test_with_timestamps_seconds_datetime_and_timestamp(self):
        base = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
        p = pm.Pipeline(runner="local")
        src = p | pm.Create([1, 2])
        a = src | pm.WithTimestamps(lambda x: x * 60)
        b = src | "dt" >> pm.WithTimestamps(lambda x: base + dt.timedelta(minutes=x))
        c = src | "ts" >> pm.WithTimestamps(lambda x: pm.Timestamp(x + 0.5))
        d = (p | "create2" >> pm.Create([0, 59, 61])).with_timestamps(float)
        counts = (d | pm.Map(lambda x: ("k", x)) | pm.WindowInto(pm.FixedWindows(60))
                  | pm.CombinePerKey(pm.Count()))
        result = p.run()
        assert [int(wv.timestamp) for wv in result.collect(a)] == [60, 120]
        assert [wv.timestamp.to_datetime() for wv in result.collect(b)] == [
            base + dt.timedelta(minutes=1), base + dt.timedelta(minutes=2)]
        assert [float(wv.timestamp) for wv in result.collect(c)] == [1.5, 2.5]
        assert [wv.value for wv in result.collect(a)] == [1, 2]
        assert sorted((wv.window, wv.value) for wv in result.collect(counts)) == [
            (iw(0, 60), ("k", 2)), (iw(60, 120), ("k", 1))]

    def test_context_params_in_map_flat_map_filter(self):
        p = pm.Pipeline(runner="local")
        src = (p | pm.Create([TV(("k", 1), 3), TV(("k", 2), 13)])
               | pm.WindowInto(pm.FixedWindows(10)) | pm.GroupByKey())
        m = src | pm.Map(lambda kv, t=pm.DoFn.TimestampParam, w=pm.DoFn.WindowParam,
                         pane=pm.DoFn.PaneInfoParam: (kv[1], float(t), w, pane.timing, pane.is_last))
        f = src | pm.FlatMap(lambda kv, w=pm.DoFn.WindowParam: [w.start] * len(kv[1]))
        fl = src | pm.Filter(lambda kv, w=pm.DoFn.WindowParam: w.start == 10)
        result = p.run()
        got = sorted((wv.value for wv in result.collect(m)), key=lambda v: v[1])
        assert got == [([1], 9.999999, iw(0, 10), pm.PaneTiming.ON_TIME, True),
                       ([2], 19.999999, iw(10, 20), pm.PaneTiming.ON_TIME, True)]
        assert sorted(wv.value for wv in result.collect(f)) == [pm.Timestamp(0), pm.Timestamp(10)]
        assert [wv.value for wv in result.collect(fl)] == [("k", [2])]


# --- DoFn ------------------------------------------------------------------------------------------

class TestDoFn:
    def test_lifecycle(self):
        log = []

        class Life(pm.DoFn):
            def setup(self):
                log.append("setup")

            def start_bundle(self):
                log.append("start")
                self.n = 0

            def process(self, x):
                log.append(x)
                self.n += 1
                yield x * 10

            def finish_bundle(self):
                log.append(("finish", self.n))

            def teardown(self):
                log.append("teardown")

        # one DoFn instance: the sequential executor (each of several workers has its own
        # copy, set up and torn down once: test_parallel_executor.py)
        _, out = run(lambda p: p | pm.Create([1, 2, 3]) | pm.ParDo(Life()),
                     argv=["--bundle_size=2", "--workers=1"])
        assert out == [10, 20, 30]
        assert log[0] == "setup" and log[-1] == "teardown"
        assert log.count("setup") == 1 and log.count("teardown") == 1
        body = log[1:-1]
        # bundles: each starts, processes its elements, finishes
        assert body[0] == "start" and body[-1][0] == "finish"
        assert [x for x in body if isinstance(x, int)] == [1, 2, 3]
        assert body.count("start") == len([x for x in body if isinstance(x, tuple)])
        assert sum(n for tag, n in (x for x in body if isinstance(x, tuple))) == 3

    def test_process_params_and_return_forms(self):
        class Tag(pm.DoFn):
            def process(self, kv, timestamp=pm.DoFn.TimestampParam, window=pm.DoFn.WindowParam,
                        pane=pm.DoFn.PaneInfoParam):
                return [(kv[0], int(timestamp), window, pane.timing)]

        p = pm.Pipeline(runner="local")
        out = (p | pm.Create([TV(("a", 1), 4), TV(("a", 2), 6)])
               | pm.WindowInto(pm.FixedWindows(5)) | pm.GroupByKey() | pm.ParDo(Tag()))
        got = sorted(wv.value for wv in p.run().collect(out))
        assert got == [("a", 4, iw(0, 5), pm.PaneTiming.ON_TIME),
                       ("a", 9, iw(5, 10), pm.PaneTiming.ON_TIME)]

    def test_process_returning_none_emits_nothing(self):
        class Drop(pm.DoFn):
            def process(self, x):
                if x > 1:
                    return [x]
                return None

        _, out = run(lambda p: p | pm.Create([1, 2, 3]) | pm.ParDo(Drop()))
        assert out == [2, 3]

    def test_side_inputs_as_process_arguments(self):
        class Scale(pm.DoFn):
            def process(self, x, factor, offset=0):
                yield x * factor + offset

        def build(p):
            factor = p | "F" >> pm.Create([3])
            offsets = p | "O" >> pm.Create([100])
            return (p | pm.Create([1, 2])
                    | pm.ParDo(Scale(), pm.AsSingleton(factor), offset=pm.AsSingleton(offsets)))
        _, out = run(build)
        assert out == [103, 106]

    def test_finish_bundle_outputs(self):
        class Sum(pm.DoFn):
            def start_bundle(self):
                self.total = 0

            def process(self, x):
                self.total += x
                return []

            def finish_bundle(self):
                yield TV(("sum", self.total), 42)
                yield pm.WindowedValue(("window", self.total), 7, iw(0, 10))

        p = pm.Pipeline(runner="local")
        out = p | pm.Create([1, 2, 3]) | pm.ParDo(Sum())
        panes = p.run().collect(out)
        assert [(wv.value, int(wv.timestamp), wv.window) for wv in panes] == [
            (("sum", 6), 42, GW), (("window", 6), 7, iw(0, 10))]

    def test_tagged_outputs(self):
        class Split(pm.DoFn):
            def process(self, x):
                if x < 0:
                    yield pm.TaggedOutput("negative", x)
                elif x % 2:
                    yield pm.TaggedOutput("odd", x)
                else:
                    yield x

        p = pm.Pipeline(runner="local")
        outs = p | pm.Create([1, -2, 4, 3, -5, 6]) | pm.ParDo(Split()).with_outputs("odd", "negative")
        result = p.run()
        assert values(result.collect(outs.main)) == [4, 6]
        assert values(result.collect(outs.odd)) == [1, 3]
        assert values(result.collect(outs["negative"])) == [-2, -5]
        odd, negative = outs   # as Beam's: the main output first only where main= names it
        assert values(result.collect(odd)) == [1, 3] and len(outs) == 2
        assert result.metrics()["ParDo(Split)"]["emitted[odd]"] == 2

    def test_one_iterable_mixes_plain_timestamped_windowed_and_tagged_outputs(self):
        """A FlatMap's plain outputs take the input's time, window, pane and diff; the others
        say their own time, window or output."""
        p = pm.Pipeline(runner="local")
        outs = (p | pm.Create([TV(1, 5)]) | pm.WindowInto(pm.FixedWindows(10))
                | pm.FlatMap(lambda x: [x, TV(x + 1, 3), pm.WindowedValue(x + 2, 12, iw(10, 20)),
                                        pm.TaggedOutput("side", x + 3), x + 4])
                .with_outputs("side", main="main"))
        result = p.run()
        assert [(wv.value, int(wv.timestamp), wv.window) for wv in result.collect(outs.main)] == [
            (1, 5, iw(0, 10)), (2, 3, iw(0, 10)), (3, 12, iw(10, 20)), (5, 5, iw(0, 10))]
        assert values(result.collect(outs.side)) == [4]

    def test_tagged_outputs_with_custom_main_tag_and_map(self):
        p = pm.Pipeline(runner="local")
        outs = (p | pm.Create([1, 2, 3])
                | pm.Map(lambda x: x if x != 2 else pm.TaggedOutput("two", x)).with_outputs(
                    "two", main="rest"))
        result = p.run()
        assert values(result.collect(outs.rest)) == [1, 3]
        assert values(result.collect(outs.two)) == [2]
        with pytest.raises(AttributeError):
            outs.missing

    def test_par_do_needs_a_dofn_or_a_function(self):
        with pytest.raises(TypeError):
            pm.ParDo(pm.DoFn)   # the class, not an instance
        with pytest.raises(TypeError):
            pm.ParDo(42)
        with pytest.raises(TypeError):
            pm.Map(42)


# --- side inputs ------------------------------------------------------------------------------------

class TestSideInputs:
    def test_views(self):
        def build(p):
            nums = p | "Nums" >> pm.Create([3, 1, 2])
            pairs = p | "Pairs" >> pm.Create([("a", 1), ("b", 2)])
            single = p | "One" >> pm.Create([10])
            none = p | "None" >> pm.Create([])
            main = p | pm.Create(["a", "b"])
            return (main | "L" >> pm.Map(lambda x, s: (x, sorted(s)), pm.AsList(nums)),
                    main | "D" >> pm.Map(lambda x, d: d[x], pm.AsDict(pairs)),
                    main | "S" >> pm.Map(lambda x, s: (x, s), pm.AsSingleton(single)),
                    main | "I" >> pm.Map(lambda x, it: sum(it), pm.AsIter(nums)),
                    main | "Def" >> pm.Map(lambda x, s: (x, s), pm.AsSingleton(none, default=-1)),
                    main | "K" >> pm.FlatMap(lambda x, d: [x] * d[x], d=pm.AsDict(pairs)),
                    main | "F" >> pm.Filter(lambda x, s: x in s, pm.AsList(
                        p | "Allowed" >> pm.Create(["b"]))))
        _, (l, d, s, i, df, k, f) = run(build)
        assert l == [("a", [1, 2, 3]), ("b", [1, 2, 3])]
        assert d == [1, 2]
        assert s == [("a", 10), ("b", 10)]
        assert i == [6, 6]
        assert df == [("a", -1), ("b", -1)]
        assert k == ["a", "b", "b"]
        assert f == ["b"]

    def test_side_input_computed_by_the_pipeline(self):
        def build(p):
            nums = p | pm.Create([1, 2, 3, 4])
            total = nums | pm.CombineGlobally(sum)
            return nums | pm.Map(lambda x, t: x / t, pm.AsSingleton(total))
        _, out = run(build)
        assert out == [0.1, 0.2, 0.3, 0.4]

    def test_windowed_side_input_matches_windows(self):
        def build(p):
            side = (p | "Side" >> pm.Create([TV(100, 1), TV(200, 12), TV(300, 14)])
                    | "SideW" >> pm.WindowInto(pm.FixedWindows(10)))
            main = (p | pm.Create([TV(1, 5), TV(2, 15), TV(3, 25)])
                    | pm.WindowInto(pm.FixedWindows(10)))
            return main | pm.Map(lambda x, s: (x, sorted(s)), pm.AsList(side))
        _, out = run(build)
        assert out == [(1, [100]), (2, [200, 300]), (3, [])]

    def test_global_side_input_for_windowed_main(self):
        def build(p):
            side = p | "Side" >> pm.Create([("rate", 2)])
            main = (p | pm.Create([TV(("k", 1), 5), TV(("k", 2), 15)])
                    | pm.WindowInto(pm.FixedWindows(10)) | pm.CombinePerKey(sum))
            return main | pm.Map(lambda kv, r: (kv[0], kv[1] * r["rate"]), pm.AsDict(side))
        _, out = run(build)
        assert sorted(out) == [("k", 2), ("k", 4)]

    def test_side_input_with_wider_windows(self):
        # main in 10 s windows reads the 60 s side window containing the end of its window
        def build(p):
            side = (p | "Side" >> pm.Create([TV("m0", 30), TV("m1", 70)])
                    | "SideW" >> pm.WindowInto(pm.FixedWindows(60)))
            main = p | pm.Create([TV("x", 5), TV("y", 65)]) | pm.WindowInto(pm.FixedWindows(10))
            return main | pm.Map(lambda v, s: (v, s), pm.AsSingleton(side))
        _, out = run(build)
        assert out == [("x", "m0"), ("y", "m1")]

    def test_streaming_main_waits_for_the_side_window(self):
        def build(p):
            side = (p | "Side" >> pm.Create([TV(("w0", 7), 3)])
                    | "SideW" >> pm.WindowInto(pm.FixedWindows(10)))
            main = (p | pm.TestStream().add_elements([TV("a", 1)]).advance_watermark_to(5)
                    .add_elements([TV("b", 2)]).advance_watermark_to_infinity()
                    | pm.WindowInto(pm.FixedWindows(10)))
            return main | pm.Map(lambda v, d: (v, d), pm.AsDict(side))
        _, out = run(build)
        assert out == [("a", {"w0": 7}), ("b", {"w0": 7})]

    def test_side_input_view_takes_a_pcollection(self):
        with pytest.raises(TypeError):
            pm.AsList([1, 2])


# --- grouping and combining --------------------------------------------------------------------------

class TestGrouping:
    def test_group_by_key(self):
        _, out = run(lambda p: p | pm.Create([("a", 1), ("b", 2), ("a", 3)]) | pm.GroupByKey())
        assert sorted((k, sorted(v)) for k, v in out) == [("a", [1, 3]), ("b", [2])]

    def test_group_by_key_with_tuple_keys(self):
        _, out = run(lambda p: p | pm.Create([(("x", 1), "p"), (("x", 1), "q"), (("y", 2), "r")])
                     | pm.GroupByKey())
        assert sorted((k, sorted(v)) for k, v in out) == [(("x", 1), ["p", "q"]), (("y", 2), ["r"])]

    def test_combine_per_key_forms(self):
        data = [("a", 1), ("b", 2), ("a", 3)]
        _, (s, f, c, cls) = run(lambda p: (
            (src := p | pm.Create(data)) | pm.CombinePerKey(sum),
            src | "F" >> pm.CombinePerKey(lambda vs: max(vs) - min(vs)),
            src | "C" >> pm.CombinePerKey(pm.Mean()),
            src | "Cls" >> pm.CombinePerKey(pm.Count)))
        assert sorted(s) == [("a", 4), ("b", 2)]
        assert sorted(f) == [("a", 2), ("b", 0)]
        assert sorted(c) == [("a", 2.0), ("b", 2.0)]
        assert sorted(cls) == [("a", 2), ("b", 1)]

    def test_combine_globally(self):
        _, (s, m, w) = run(lambda p: (
            (src := p | pm.Create([TV(1, 1), TV(2, 2), TV(10, 12)])) | pm.CombineGlobally(sum),
            src | "Max" >> pm.CombineGlobally(pm.Max()),
            src | pm.WindowInto(pm.FixedWindows(10)) | "W" >> pm.CombineGlobally(pm.ToList())))
        assert s == [13] and m == [10]
        assert sorted(map(sorted, w)) == [[1, 2], [10]]

    def test_combine_values(self):
        _, out = run(lambda p: p | pm.Create([("a", [1, 2, 3]), ("b", [])])
                     | pm.CombineValues(sum))
        assert out == [("a", 6), ("b", 0)]
        _, out = run(lambda p: p | pm.Create([("a", 1), ("a", 5), ("b", 2)]) | pm.GroupByKey()
                     | pm.CombineValues(pm.Mean()))
        assert sorted(out) == [("a", 3.0), ("b", 2.0)]

    def test_flatten(self):
        def build(p):
            a = p | "A" >> pm.Create([1, 2])
            b = p | "B" >> pm.Create([3])
            c = p | "C" >> pm.Create([4, 5])
            return (a, b, c) | pm.Flatten(), a.flatten(b)
        _, (all3, two) = run(build)
        assert sorted(all3) == [1, 2, 3, 4, 5]
        assert sorted(two) == [1, 2, 3]

    def test_flatten_keeps_windows_and_feeds_a_grouping(self):
        def build(p):
            a = p | "A" >> pm.Create([TV(("k", 1), 1)]) | "WA" >> pm.WindowInto(pm.FixedWindows(10))
            b = p | "B" >> pm.Create([TV(("k", 2), 2), TV(("k", 3), 11)]) | "WB" >> pm.WindowInto(
                pm.FixedWindows(10))
            return [a, b] | pm.Flatten() | pm.CombinePerKey(sum)
        p = pm.Pipeline(runner="local")
        out = build(p)
        got = sorted((wv.window, wv.value) for wv in p.run().collect(out))
        assert got == [(iw(0, 10), ("k", 3)), (iw(10, 20), ("k", 3))]

    def test_co_group_by_key_dict_form(self):
        def build(p):
            emails = p | "E" >> pm.Create([("amy", "a@x"), ("bob", "b@x"), ("amy", "a@y")])
            phones = p | "P" >> pm.Create([("amy", "111"), ("cal", "333")])
            return {"emails": emails, "phones": phones} | pm.CoGroupByKey()
        _, out = run(build)
        got = {k: {t: sorted(v) for t, v in d.items()} for k, d in out}
        assert got == {"amy": {"emails": ["a@x", "a@y"], "phones": ["111"]},
                       "bob": {"emails": ["b@x"], "phones": []},
                       "cal": {"emails": [], "phones": ["333"]}}

    def test_co_group_by_key_tuple_form(self):
        def build(p):
            a = p | "A" >> pm.Create([(1, "x"), (2, "y")])
            b = p | "B" >> pm.Create([(1, 10), (1, 11)])
            return (a, b) | pm.CoGroupByKey(), a.co_group_by_key(b)
        _, (out, fluent) = run(build)
        got = sorted((k, (sorted(x), sorted(y))) for k, (x, y) in out)
        assert got == [(1, (["x"], [10, 11])), (2, (["y"], []))]
        assert sorted((k, (sorted(x), sorted(y))) for k, (x, y) in fluent) == got

    def test_co_group_by_key_per_window(self):
        def build(p):
            a = p | "A" >> pm.Create([TV(("k", "a0"), 1), TV(("k", "a1"), 11)]) | "WA" >> pm.WindowInto(
                pm.FixedWindows(10))
            b = p | "B" >> pm.Create([TV(("k", "b1"), 12)]) | "WB" >> pm.WindowInto(pm.FixedWindows(10))
            return {"a": a, "b": b} | pm.CoGroupByKey()
        p = pm.Pipeline(runner="local")
        out = build(p)
        got = sorted((wv.window, wv.value[1]["a"], wv.value[1]["b"]) for wv in p.run().collect(out))
        assert got == [(iw(0, 10), ["a0"], []), (iw(10, 20), ["a1"], ["b1"])]

    def test_partition(self):
        def build(p):
            parts = p | pm.Create(list(range(10))) | pm.Partition(lambda x, n: x % n, 3)
            assert isinstance(parts, tuple) and len(parts) == 3
            by_limit = (p | "C2" >> pm.Create([1, 50, 100])).partition(
                lambda x, n, limit: 0 if x < limit else 1, 2, 60)
            return parts + by_limit
        _, (a, b, c, small, big) = run(build)
        assert (a, b, c) == ([0, 3, 6, 9], [1, 4, 7], [2, 5, 8])
        assert (small, big) == ([1, 50], [100])

    def test_partition_rejects_bad_index(self):
        p = pm.Pipeline(runner="local")
        _ = p | pm.Create([1]) | pm.Partition(lambda x, n: 5, 2)
        with pytest.raises(pm.UserCodeError, match="partition"):
            p.run()

    def test_distinct(self):
        _, (d, w) = run(lambda p: (
            p | pm.Create([3, 1, 3, 2, 1, 3]) | pm.Distinct(),
            p | "W" >> pm.Create([TV("a", 1), TV("a", 2), TV("a", 15), TV("b", 16)])
            | pm.WindowInto(pm.FixedWindows(10)) | "D" >> pm.Distinct()))
        assert sorted(d) == [1, 2, 3]
        assert sorted(w) == ["a", "a", "b"]          # once per window

    def test_keys_values_kvswap(self):
        _, (k, v, s) = run(lambda p: (
            (src := p | pm.Create([("a", 1), ("b", 2)])) | pm.Keys(),
            src | pm.Values(),
            src | pm.KvSwap()))
        assert (k, v, s) == (["a", "b"], [1, 2], [(1, "a"), (2, "b")])

    def test_kvswap_output_groups(self):
        _, out = run(lambda p: p | pm.Create([("a", 1), ("b", 1)]) | pm.KvSwap() | pm.GroupByKey())
        assert [(k, sorted(v)) for k, v in out] == [(1, ["a", "b"])]


# --- combiners -----------------------------------------------------------------------------------

def fold(fn, xs, retract=()):
    acc = fn.create_accumulator()
    for x in xs:
        acc = fn.add_input(acc, x)
    for x in retract:
        acc = fn.retract_input(acc, x)
    return fn.extract_output(acc)


class TestCombiners:
    def test_sum_count_mean(self):
        assert fold(pm.Sum(), [1, 2, 3]) == 6 and fold(pm.Sum(), []) == 0
        assert fold(pm.Sum(), [1, 2, 3], retract=[2]) == 4
        assert fold(pm.Count(), "abc") == 3 and fold(pm.Count(), "abc", retract="a") == 2
        assert fold(pm.Mean(), [1, 2, 3, 6]) == 3.0
        assert fold(pm.Mean(), [1, 2, 3, 6], retract=[6]) == 2.0
        assert math.isnan(fold(pm.Mean(), []))

    def test_min_max(self):
        assert fold(pm.Min(), [5, 2, 8]) == 2 and fold(pm.Max(), [5, 2, 8]) == 8
        # retracting the extreme value restores the next one
        assert fold(pm.Min(), [5, 2, 8, 2], retract=[2]) == 2
        assert fold(pm.Min(), [5, 2, 8], retract=[2]) == 5
        assert fold(pm.Max(), [5, 2, 8], retract=[8]) == 5
        assert fold(pm.Min(), []) is None and fold(pm.Max(default=0), []) == 0
        assert fold(pm.Max(default=-1), [3], retract=[3]) == -1

    def test_top_and_to_list(self):
        assert fold(pm.Top(2), [5, 1, 9, 7]) == [9, 7]
        assert fold(pm.Top(2, reverse=True), [5, 1, 9, 7]) == [1, 5]
        assert fold(pm.Top(1, key=len), ["aa", "b", "cccc"]) == ["cccc"]
        assert fold(pm.Top(2), [5, 1, 9, 7], retract=[9]) == [7, 5]
        assert sorted(fold(pm.ToList(), [3, 1, 2])) == [1, 2, 3]
        assert sorted(fold(pm.ToList(), [3, 1, 2], retract=[1])) == [2, 3]
        with pytest.raises(ValueError):
            pm.Top(0)

    def test_merge_accumulators(self):
        for fn, xs, want in [(pm.Sum(), [1, 2, 3, 4], 10), (pm.Count(), [1, 2, 3, 4], 4),
                             (pm.Mean(), [1, 2, 3, 6], 3.0), (pm.Min(), [4, 2, 3, 1], 1),
                             (pm.Max(), [4, 2, 3, 1], 4), (pm.Top(2), [4, 2, 3, 1], [4, 3])]:
            a = fn.create_accumulator()
            b = fn.create_accumulator()
            for x in xs[:2]:
                a = fn.add_input(a, x)
            for x in xs[2:]:
                b = fn.add_input(b, x)
            assert fn.extract_output(fn.merge_accumulators([a, b])) == want, fn
        merged = pm.ToList().merge_accumulators([[1], [2, 3]])
        assert sorted(pm.ToList().extract_output(merged)) == [1, 2, 3]

    def test_builtin_combiners_in_pipeline(self):
        data = [("a", 4), ("a", 1), ("a", 7), ("b", 2)]
        _, outs = run(lambda p: tuple(
            (p | f"C{i}" >> pm.Create(data)) | f"X{i}" >> pm.CombinePerKey(fn)
            for i, fn in enumerate([pm.Sum(), pm.Count(), pm.Mean(), pm.Min(), pm.Max(),
                                    pm.Top(2), pm.ToList(), min, max])))
        as_dicts = [dict(o) for o in outs]
        assert as_dicts[0] == {"a": 12, "b": 2}
        assert as_dicts[1] == {"a": 3, "b": 1}
        assert as_dicts[2] == {"a": 4.0, "b": 2.0}
        assert as_dicts[3] == {"a": 1, "b": 2} == as_dicts[7]
        assert as_dicts[4] == {"a": 7, "b": 2} == as_dicts[8]
        assert as_dicts[5] == {"a": [7, 4], "b": [2]}
        assert {k: sorted(v) for k, v in as_dicts[6].items()} == {"a": [1, 4, 7], "b": [2]}

    def test_custom_combine_fn(self):
        class SumAndCount(pm.CombineFn):
            def create_accumulator(self):
                return (0, 0)

            def add_input(self, acc, v):
                return (acc[0] + v, acc[1] + 1)

            def merge_accumulators(self, accs):
                accs = list(accs)
                return (sum(a[0] for a in accs), sum(a[1] for a in accs))

            def extract_output(self, acc):
                return f"{acc[0]}/{acc[1]}"

        _, out = run(lambda p: p | pm.Create([("k", 1), ("k", 5)]) | pm.CombinePerKey(SumAndCount()))
        assert out == [("k", "6/2")]
        assert not SumAndCount().can_retract() and SumAndCount().can_merge()
        assert pm.Sum().can_retract() and pm.ToList().can_retract()


# --- fluent API and labels -------------------------------------------------------------------------

class TestFluentAndLabels:
    def test_fluent_chain_from_the_design(self):
        p = pm.Pipeline(runner="local")
        out = (p.create([TV(("u", 1), 0), TV(("u", 2), 30), TV(("v", 5), 10), TV(("u", 4), 200)])
               .map(lambda kv: (kv[0], kv[1] * 10))
               .window_into(pm.Sessions(60))
               .triggering(pm.AfterWatermark(early=pm.AfterCount(1)))
               .retracting()
               .combine_per_key(sum))
        panes = p.run().collect(out)
        net = {}
        for wv in panes:
            net[(wv.value, wv.window)] = net.get((wv.value, wv.window), 0) + wv.diff
        assert {k: n for k, n in net.items() if n} == {
            (("u", 30), iw(0, 90)): 1, (("v", 50), iw(10, 70)): 1, (("u", 40), iw(200, 260)): 1}

    def test_fluent_methods_match_transforms(self):
        data = [("a", 1), ("b", 2), ("a", 3)]
        p = pm.Pipeline(runner="local")
        src = p.create(data)
        outs = dict(
            flat=src.flat_map(lambda kv: [kv[1]] * 2),
            filt=src.filter(lambda kv: kv[1] > 1),
            keys=src.keys(), vals=src.values(), swap=src.kv_swap(),
            gbk=src.group_by_key(),
            cpk=src.combine_per_key(sum),
            cg=src.values().combine_globally(sum),
            cv=src.group_by_key().combine_values(sum),
            dist=src.keys().distinct(),
            pardo=src.par_do(_Echo()),
            applied=src.apply(pm.Map(lambda kv: kv[0] * 2), label="Twice"))
        part = src.partition(lambda kv, n: 0 if kv[0] == "a" else 1, 2)
        result = p.run()
        got = {k: values(result.collect(v)) for k, v in outs.items()}
        assert got["flat"] == [1, 1, 2, 2, 3, 3]
        assert got["filt"] == [("b", 2), ("a", 3)]
        assert got["keys"] == ["a", "b", "a"] and got["vals"] == [1, 2, 3]
        assert got["swap"] == [(1, "a"), (2, "b"), (3, "a")]
        assert sorted((k, sorted(v)) for k, v in got["gbk"]) == [("a", [1, 3]), ("b", [2])]
        assert sorted(got["cpk"]) == sorted(got["cv"]) == [("a", 4), ("b", 2)]
        assert got["cg"] == [6]
        assert sorted(got["dist"]) == ["a", "b"]
        assert got["pardo"] == data
        assert got["applied"] == ["aa", "bb", "aa"]
        assert "Twice" in result.metrics()
        assert values(result.collect(part[0])) == [("a", 1), ("a", 3)]

    def test_labels(self):
        p = pm.Pipeline(runner="local")
        src = p | "Read numbers" >> pm.Create([1, 2, 3])
        a = src | "Square" >> pm.Map(lambda x: x * x)
        b = src | "Square" >> pm.Map(lambda x: -x)          # a duplicate label is made unique
        c = src | pm.Map(abs)
        total = a | "Total" >> pm.CombineGlobally(sum)
        result = p.run()
        metrics = result.metrics()
        assert {"Read numbers", "Square", "Square_2", "Map(abs)"} <= set(metrics)
        assert metrics["Square"]["received"] == 3 and metrics["Square"]["emitted"] == 3
        # a composite's parts are scoped under its label
        assert any(k.startswith("Total/") for k in metrics)
        assert values(result.collect(total)) == [14]
        assert values(result.collect(b)) == [-1, -2, -3]
        assert values(result.collect(c)) == [1, 2, 3]

    def test_labelled_transform_is_a_copy(self):
        m = pm.Map(str)
        labelled = "Named" >> m
        assert labelled.label == "Named" and m.label is None

    def test_context_manager_runs_on_exit(self):
        with pm.Pipeline(runner="local") as p:
            out = p | pm.Create([1, 2]) | pm.Map(lambda x: x + 1)
        assert values(p.result.collect(out)) == [2, 3]
        assert p.result.wait_until_finish() == "DONE"

    def test_pipeline_options(self):
        opts = pm.PipelineOptions(["--runner=local", "--bundle_size=7", "--quiet"])
        assert opts.runner == "local" and opts.bundle_size == 7 and opts.quiet
        with pm.Pipeline(options=opts) as p:
            out = p | pm.Create(range(20)) | pm.CombineGlobally(pm.Count())
        assert values(p.result.collect(out)) == [20]

    def test_custom_composite_ptransform(self):
        class CountWords(pm.PTransform):
            def expand(self, pcoll):
                return (pcoll | pm.FlatMap(str.split) | pm.Map(lambda w: (w, 1))
                        | pm.CombinePerKey(sum))

        p = pm.Pipeline(runner="local")
        out = p | pm.Create(["a b a", "b c"]) | "Count" >> CountWords()
        result = p.run()
        assert sorted(values(result.collect(out))) == [("a", 2), ("b", 2), ("c", 1)]
        assert any(k.startswith("Count/") for k in result.metrics())


class _Echo(pm.DoFn):
    def process(self, x):
        yield x


class TestCombineGloballyDefaults:
    """Beam's rule: a bounded, globally windowed input with the default trigger gets the
    combiner's empty result when it has no elements, unless `.without_defaults()`."""

    def test_empty_input_gives_the_default_once(self):
        _, (total, mean, nothing) = run(lambda p: (
            (src := p | pm.Create([])) | pm.CombineGlobally(sum),
            src | "Count" >> pm.CombineGlobally(pm.Count()),
            src | "NoDefault" >> pm.CombineGlobally(sum).without_defaults()))
        assert (total, mean, nothing) == ([0], [0], [])

    def test_non_empty_input_is_not_padded(self):
        result_and_values = run(lambda p: p | pm.Create([1, 2, 3]) | pm.CombineGlobally(sum))
        assert result_and_values[1] == [6]

    def test_windowed_input_gets_no_default_for_empty_windows(self):
        _, out = run(lambda p: p | pm.Create([]) | pm.WindowInto(pm.FixedWindows(10))
                     | pm.CombineGlobally(sum))
        assert out == []


def test_builtin_combiners_per_key_and_globally_as_in_beam():
    with pm.Pipeline() as p:
        kvs = p | pm.Create([("a", 1), ("b", 4), ("a", 3)])
        means = kvs | pm.Mean.PerKey()
        counts = kvs | pm.Count.PerKey()
        total = kvs | pm.Values() | pm.Sum.Globally()
    assert sorted(w.value for w in p.result.collect(means)) == [("a", 2.0), ("b", 4.0)]
    assert sorted(w.value for w in p.result.collect(counts)) == [("a", 2), ("b", 1)]
    assert [w.value for w in p.result.collect(total)] == [8]
