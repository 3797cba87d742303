"""Errors a pipeline author sees: construction errors raised while the pipeline is built,
run-time failures of user code, dead-letter outputs, and option errors."""
from __future__ import annotations

import subprocess
import sys

import pytest

import pomset as pm

from combinefns import NoRetract

TV = pm.TimestampedValue
RETRACTING = pm.AccumulationMode.RETRACTING


def new():
    return pm.Pipeline(runner="local")


class NoMerge(pm.CombineFn):
    def create_accumulator(self):
        return 0

    def add_input(self, acc, v):
        return acc + v

    def retract_input(self, acc, v):
        return acc - v


class NoOnMerge(pm.Trigger):
    """A custom trigger without on_merge."""

    def on_element(self, ctx, value, timestamp):
        ctx.state["n"] = ctx.state.get("n", 0) + 1

    def should_fire(self, ctx):
        return ctx.state.get("n", 0) >= 2


# --- construction errors ------------------------------------------------------------------------

class TestConstruction:
    def test_group_by_key_of_non_key_value_elements(self):
        p = new()
        ints = p | "Numbers" >> pm.Create([1, 2, 3])
        with pytest.raises(pm.PipelineConstructionError) as info:
            ints | pm.GroupByKey()
        msg = str(info.value)
        assert "GroupByKey" in msg and "Numbers" in msg and "key, value" in msg
        with pytest.raises(pm.PipelineConstructionError):
            ints | pm.CombinePerKey(sum)
        with pytest.raises(pm.PipelineConstructionError):
            (p | "Triples" >> pm.Create([(1, 2, 3)])) | "G2" >> pm.GroupByKey()

    def test_construction_errors_are_raised_before_running(self):
        p = new()
        with pytest.raises(pm.PipelineConstructionError):
            p | pm.Create(["a", "b"]) | pm.GroupByKey()
        assert p.result is None

    def test_typed_map_output_is_checked(self):
        def to_len(s: str) -> int:
            return len(s)
        p = new()
        lengths = p | pm.Create(["ab", "c"]) | pm.Map(to_len)
        with pytest.raises(pm.PipelineConstructionError):
            lengths | pm.GroupByKey()

    def test_unbounded_global_window_with_default_trigger(self):
        p = new()
        stream = p | "Events" >> pm.TestStream(endless=True).add_elements([("a", 1)]).advance_watermark_to(10)
        with pytest.raises(pm.PipelineConstructionError) as info:
            stream | pm.GroupByKey()
        msg = str(info.value)
        assert "unbounded" in msg and "global window" in msg and "Events" in msg
        for trigger in (pm.AfterWatermark(late=pm.AfterCount(1)), pm.Never(), pm.DefaultTrigger()):
            with pytest.raises(pm.PipelineConstructionError):
                stream | pm.WindowInto(trigger=trigger) | pm.CombinePerKey(sum)
        with pytest.raises(pm.PipelineConstructionError):
            stream | pm.Values() | pm.CombineGlobally(sum)

    def test_unbounded_is_fine_with_windows_or_early_triggers(self):
        p = new()
        stream = p | pm.TestStream(endless=True).add_elements([TV(("a", 1), 1)]).advance_watermark_to(10)
        a = stream | pm.WindowInto(pm.FixedWindows(5)) | pm.GroupByKey()
        b = stream | "R" >> pm.WindowInto(trigger=pm.Repeatedly(pm.AfterCount(1))) | "G" >> pm.GroupByKey()
        c = (stream | "E" >> pm.WindowInto(trigger=pm.AfterWatermark(early=pm.AfterCount(1)))
             | "G2" >> pm.GroupByKey())
        result = p.run()
        assert [wv.value for wv in result.collect(a)] == [("a", [1])]
        assert [wv.value for wv in result.collect(b)] == [("a", [1])]
        assert [wv.value for wv in result.collect(c)] == [("a", [1])]

    def test_a_test_stream_closes_its_watermark_at_the_end_as_beams_does(self):
        p = new()
        out = (p | pm.TestStream().add_elements([("a", 1)]).advance_watermark_to(10)
               | pm.GroupByKey())
        assert [wv.value for wv in p.run().collect(out)] == [("a", [1])]

    def test_test_stream_ending_at_infinity_is_bounded(self):
        p = new()
        out = (p | pm.TestStream().add_elements([("a", 1)]).advance_watermark_to_infinity()
               | pm.GroupByKey())
        assert [wv.value for wv in p.run().collect(out)] == [("a", [1])]

    def test_retracting_needs_retract_input(self):
        p = new()
        src = p | pm.Create([TV(("a", 1), 1)])
        with pytest.raises(pm.PipelineConstructionError) as info:
            src | pm.WindowInto(pm.FixedWindows(10), accumulation_mode=RETRACTING) \
                | pm.CombinePerKey(NoRetract())
        assert "retract_input" in str(info.value) and "NoRetract" in str(info.value)
        # the same CombineFn is fine without retractions
        ok = src | "Fine" >> pm.CombinePerKey(NoRetract())
        assert [wv.value for wv in p.run().collect(ok)] == [("a", 1)]

    def test_retractions_downstream_need_retract_input(self):
        p = new()
        sums = (p | pm.Create([TV(("a", 1), 1)])
                | pm.WindowInto(pm.FixedWindows(10), accumulation_mode=RETRACTING)
                | pm.CombinePerKey(sum))
        with pytest.raises(pm.PipelineConstructionError, match="retract"):
            sums | pm.Map(lambda kv: ("all", kv[1])) | pm.CombinePerKey(NoRetract())

    def test_merging_windows_need_a_mergeable_trigger(self):
        p = new()
        src = p | pm.Create([TV(("a", 1), 1)])
        with pytest.raises(pm.PipelineConstructionError) as info:
            src | pm.WindowInto(pm.Sessions(10), trigger=pm.Repeatedly(NoOnMerge())) | pm.GroupByKey()
        assert "on_merge" in str(info.value)
        with pytest.raises(pm.PipelineConstructionError, match="on_merge"):
            src | pm.WindowInto(pm.Sessions(10), trigger=pm.AfterWatermark(early=NoOnMerge()))
        # fine for non-merging windows
        ok = (src | "F" >> pm.WindowInto(pm.FixedWindows(10), trigger=pm.Repeatedly(NoOnMerge()))
              | "G" >> pm.GroupByKey())
        assert [wv.value for wv in p.run().collect(ok)] == [("a", [1])]

    def test_merging_windows_need_merge_accumulators(self):
        p = new()
        src = p | pm.Create([TV(("a", 1), 1)]) | pm.WindowInto(pm.Sessions(10))
        with pytest.raises(pm.PipelineConstructionError) as info:
            src | pm.CombinePerKey(NoMerge())
        assert "merge_accumulators" in str(info.value) and "NoMerge" in str(info.value)

    def test_non_monotonic_custom_window_fn(self):
        class Backwards(pm.WindowFn):
            """Early timestamps get a huge window; later ones a tiny one that ends earlier."""

            def assign_windows(self, timestamp, element):
                t = float(timestamp)
                if t < 100:
                    return [pm.IntervalWindow(0, 10**10)]
                return [pm.IntervalWindow(t, t + 1)]

        p = new()
        with pytest.raises(pm.PipelineConstructionError, match="monotonic"):
            p | pm.Create([TV(("a", 1), 1)]) | pm.WindowInto(Backwards())

    def test_custom_window_fn_must_contain_the_timestamp(self):
        class Elsewhere(pm.WindowFn):
            def assign_windows(self, timestamp, element):
                return [pm.IntervalWindow(float(timestamp) + 10, float(timestamp) + 20)]

        p = new()
        with pytest.raises(pm.PipelineConstructionError, match="does not contain"):
            p | pm.Create([TV(("a", 1), 1)]) | pm.WindowInto(Elsewhere())

    def test_data_dependent_window_fn_is_checked_per_element(self):
        class ByValue(pm.WindowFn):
            def assign_windows(self, timestamp, element):
                start = element[1]               # fails on the construction-time probe
                return [pm.IntervalWindow(start, start + 1)]

        p = new()
        # the second element (at 5) is put in [0, 1), which ends before it: it would be late
        # for its own window
        _ = (p | pm.Create([TV(("a", 5), 5), TV(("a", 0), 5)]) | pm.WindowInto(ByValue())
             | pm.GroupByKey())
        with pytest.raises(pm.UserCodeError, match="which that window does not contain"):
            p.run()

    def test_flatten_of_differently_windowed_inputs(self):
        p = new()
        a = p | "A" >> pm.Create([TV(1, 1)]) | "WA" >> pm.WindowInto(pm.FixedWindows(10))
        b = p | "B" >> pm.Create([TV(1, 1)]) | "WB" >> pm.WindowInto(pm.FixedWindows(20))
        with pytest.raises(pm.PipelineConstructionError, match="Flatten"):
            (a, b) | pm.Flatten()

    def test_argument_errors(self):
        p = new()
        src = p | pm.Create([("a", 1)])
        with pytest.raises(TypeError):
            pm.WindowInto("fixed")
        with pytest.raises(TypeError):
            pm.WindowInto(pm.FixedWindows(1), trigger="often")
        with pytest.raises(TypeError):
            pm.WindowInto(accumulation_mode="RETRACTING")
        with pytest.raises(TypeError):
            pm.WindowInto(timestamp_combiner="EARLIEST")
        with pytest.raises(ValueError):
            pm.WindowInto(pm.FixedWindows(1), allowed_lateness=-1)
        with pytest.raises(TypeError):
            pm.Create("abc")
        with pytest.raises(TypeError):
            pm.CombinePerKey(42)
        with pytest.raises(TypeError):
            src | "not a transform"
        with pytest.raises(TypeError):
            pm.TaggedOutput(1, "x")
        with pytest.raises(pm.PipelineConstructionError):
            src | pm.Create([1])                       # a source applied to a PCollection
        other = new() | pm.Create([("b", 2)])
        with pytest.raises(pm.PipelineConstructionError):
            (src, other) | pm.Flatten()

    def test_test_stream_steps(self):
        s = pm.TestStream().advance_watermark_to(10)
        with pytest.raises(ValueError):
            s.advance_watermark_to(5)
        with pytest.raises(ValueError):
            s.advance_processing_time(0)
        with pytest.raises(ValueError):
            s.advance_processing_time(-1)

    def test_one_test_stream_per_pipeline(self):
        p = new()
        a = p | "S1" >> pm.TestStream().add_elements([1]).advance_watermark_to_infinity()
        b = p | "S2" >> pm.TestStream().add_elements([2]).advance_watermark_to_infinity()
        _ = (a, b) | pm.Flatten()
        with pytest.raises(pm.PipelineConstructionError, match="TestStream"):
            p.run()


# --- run-time failures --------------------------------------------------------------------------

def _invert(x):
    return 1 / x


class TestUserCodeErrors:
    def test_failing_map_names_element_label_and_traceback(self):
        p = new()
        _ = p | pm.Create([1, 2, 0, 4]) | "Invert" >> pm.Map(_invert)
        with pytest.raises(pm.UserCodeError) as info:
            p.run()
        msg = str(info.value)
        assert "'Invert'" in msg
        assert "element 0" in msg
        assert "ZeroDivisionError" in msg
        assert "Traceback" in msg and "_invert" in msg and "return 1 / x" in msg
        assert isinstance(info.value.__cause__, ZeroDivisionError)

    def test_failing_dofn(self):
        class Parse(pm.DoFn):
            def process(self, line):
                yield int(line)

        p = new()
        _ = p | pm.Create(["1", "two"]) | pm.ParDo(Parse())
        with pytest.raises(pm.UserCodeError) as info:
            p.run()
        msg = str(info.value)
        assert "ParDo(Parse)" in msg and "'two'" in msg and "ValueError" in msg
        assert "int(line)" in msg

    def test_failing_transform_inside_a_composite_is_named_by_its_full_label(self):
        class Wrap(pm.PTransform):
            def expand(self, pcoll):
                return pcoll | "Boom" >> pm.Map(_invert)

        p = new()
        _ = p | pm.Create([0]) | "Outer" >> Wrap()
        with pytest.raises(pm.UserCodeError, match="Outer/Boom"):
            p.run()

    def test_failing_combine_fn(self):
        class Picky(pm.CombineFn):
            def create_accumulator(self):
                return 0

            def add_input(self, acc, v):
                if v < 0:
                    raise ValueError("negative input")
                return acc + v

            def merge_accumulators(self, accs):
                return sum(accs)

        p = new()
        _ = p | pm.Create([("k", 1), ("k", -1)]) | "Combine" >> pm.CombinePerKey(Picky())
        with pytest.raises(pm.UserCodeError) as info:
            p.run()
        msg = str(info.value)
        assert "Combine" in msg and "negative input" in msg and "('k', -1)" in msg

    def test_failing_timestamp_function(self):
        p = new()
        _ = p | pm.Create([{"t": 1}, {}]) | pm.WithTimestamps(lambda d: d["t"])
        with pytest.raises(pm.UserCodeError, match="KeyError"):
            p.run()

    def test_bad_timestamp_type(self):
        p = new()
        _ = p | pm.Create(["x"]) | pm.WithTimestamps(lambda v: "yesterday")
        with pytest.raises(pm.UserCodeError, match="timestamp"):
            p.run()

    def test_non_key_value_at_run_time(self):
        p = new()
        untyped = p | pm.Create([1, 2]) | pm.Map(lambda x: abs(x))   # type unknown at construction
        _ = untyped | pm.GroupByKey()
        with pytest.raises(pm.UserCodeError, match="key, value"):
            p.run()

    def test_unhashable_key(self):
        p = new()
        _ = p | pm.Create([1]) | pm.Map(lambda x: ([x], x)) | pm.GroupByKey()
        with pytest.raises(pm.UserCodeError, match="hashable"):
            p.run()

    def test_undeclared_output_tag(self):
        p = new()
        _ = p | pm.Create([1]) | pm.FlatMap(lambda x: [pm.TaggedOutput("extra", x)])
        with pytest.raises(pm.UserCodeError, match="extra"):
            p.run()

    def test_flat_map_must_return_an_iterable_of_outputs(self):
        p = new()
        _ = p | pm.Create([1]) | pm.FlatMap(lambda x: "abc")
        with pytest.raises(pm.UserCodeError, match="iterable"):
            p.run()

    def test_singleton_side_input_with_many_values(self):
        p = new()
        side = p | "Side" >> pm.Create([1, 2])
        _ = p | pm.Create(["x"]) | pm.Map(lambda x, s: s, pm.AsSingleton(side))
        with pytest.raises(pm.UserCodeError, match=r"Map\(<lambda>\).*AsSingleton"):
            p.run()

    def test_teardown_runs_after_a_failure(self):
        log = []

        class Fails(pm.DoFn):
            def setup(self):
                log.append("setup")

            def process(self, x):
                raise RuntimeError("nope")

            def teardown(self):
                log.append("teardown")

        p = new()
        _ = p | pm.Create([1]) | pm.ParDo(Fails())
        with pytest.raises(pm.UserCodeError, match="nope"):
            p.run()
        # every instance set up (one per worker) is torn down
        assert log[-1] == "teardown" and log.count("setup") == log.count("teardown") >= 1


# --- dead letters --------------------------------------------------------------------------------

class TestDeadLetters:
    def test_map_with_exception_handling(self):
        p = new()
        good, bad = p | pm.Create([1, 2, 0, 4]) | "Invert" >> pm.Map(_invert).with_exception_handling()
        total = good.keep() | pm.CombineGlobally(sum)
        result = p.run()
        assert [wv.value for wv in result.collect(good)] == [1.0, 0.5, 0.25]
        assert [wv.value for wv in result.collect(total)] == [1.75]
        (letter,) = [wv.value for wv in result.collect(bad)]
        assert isinstance(letter, pm.DeadLetter)
        assert letter.element == 0
        assert letter.transform == "Invert"
        assert letter.error == "ZeroDivisionError: division by zero"
        assert "_invert" in letter.traceback and "ZeroDivisionError" in letter.traceback
        assert result.metrics()["Invert"]["dead_lettered"] == 1
        assert result.counter("dead_lettered") == 1

    def test_par_do_with_exception_handling_and_custom_tags(self):
        class Parse(pm.DoFn):
            def process(self, line):
                yield int(line)

        p = new()
        outs = (p | pm.Create(["1", "x", "3", "y"])
                | "Parse" >> pm.ParDo(Parse()).with_exception_handling(main_tag="ok",
                                                                       dead_letter_tag="failed"))
        result = p.run()
        assert [wv.value for wv in result.collect(outs.ok)] == [1, 3]
        letters = [wv.value for wv in result.collect(outs.failed)]
        assert [(d.element, d.transform) for d in letters] == [("x", "Parse"), ("y", "Parse")]
        assert all(d.error.startswith("ValueError") for d in letters)
        assert result.counter("dead_lettered") == 2

    def test_failed_element_emits_no_partial_outputs(self):
        def explode(x):
            yield x
            if x == 2:
                raise ValueError("boom")
            yield x * 10

        p = new()
        good, bad = p | pm.Create([1, 2, 3]) | pm.FlatMap(explode).with_exception_handling()
        result = p.run()
        assert [wv.value for wv in result.collect(good)] == [1, 10, 3, 30]
        assert [wv.value.element for wv in result.collect(bad)] == [2]

    def test_dead_letters_keep_event_time_and_window(self):
        p = new()
        good, bad = (p | pm.Create([TV(0, 15), TV(1, 25)]) | pm.WindowInto(pm.FixedWindows(10))
                     | pm.Map(_invert).with_exception_handling())
        result = p.run()
        (wv,) = result.collect(bad)
        assert wv.timestamp == pm.Timestamp(15) and wv.window == pm.IntervalWindow(10, 20)
        assert [g.window for g in result.collect(good)] == [pm.IntervalWindow(20, 30)]

    def test_no_failures_no_dead_letters(self):
        p = new()
        good, bad = p | pm.Create([1, 2]) | pm.Map(_invert).with_exception_handling()
        result = p.run()
        assert result.collect(bad) == []
        assert result.counter("dead_lettered") == 0
        assert [wv.value for wv in result.collect(good)] == [1.0, 0.5]


# --- options ---------------------------------------------------------------------------------------

class TestOptions:
    def test_unknown_flag(self):
        with pytest.raises(pm.OptionsError) as info:
            pm.PipelineOptions(["--bogus"])
        assert "--bogus" in str(info.value)
        with pytest.raises(pm.OptionsError, match="--also_bogus"):
            pm.PipelineOptions(["--runner=local", "--also_bogus=3"])
        with pytest.raises(pm.OptionsError, match="bogus"):
            pm.Pipeline(argv=["--bogus"])

    def test_unknown_runner(self):
        with pytest.raises(pm.OptionsError) as info:
            pm.PipelineOptions(["--runner=nope"])
        assert "nope" in str(info.value) and "local" in str(info.value)
        with pytest.raises(pm.OptionsError, match="flink"):
            pm.Pipeline(argv=["--runner", "flink"])
        with pytest.raises(pm.OptionsError, match="nope"):
            pm.Pipeline(runner="nope")

    def test_bad_values_and_keywords(self):
        with pytest.raises(pm.OptionsError):
            pm.PipelineOptions(["--bundle_size=many"])
        with pytest.raises(pm.OptionsError, match="colour"):
            pm.PipelineOptions(colour="blue")
        for flag in ("--max_records_per_batch", "--max_files_per_batch"):
            with pytest.raises(pm.OptionsError, match=f"{flag} must be 1 or more, got 0"):
                pm.PipelineOptions([f"{flag}=0"])
            with pytest.raises(pm.OptionsError, match=f"{flag} takes a whole number, got 'lots'"):
                pm.PipelineOptions([f"{flag}=lots"])
        assert pm.PipelineOptions(["--max_records_per_batch=5000"]).max_records_per_batch == 5000
        assert isinstance(pm.OptionsError("x"), ValueError)

    def test_custom_options(self):
        class MyOptions(pm.PipelineOptions):
            @classmethod
            def add_arguments(cls, parser):
                parser.add_argument("--threshold", type=int, default=5)

        opts = MyOptions(["--threshold=9", "--runner=local"])
        assert opts.threshold == 9 and opts.runner == "local"
        assert MyOptions([]).threshold == 5
        with pytest.raises(pm.OptionsError, match="--other"):
            MyOptions(["--other=1"])
        with pytest.raises(AttributeError):
            opts.missing_option


    @pytest.mark.parametrize("kind", ["classmethod", "staticmethod", "method"])
    def test_add_arguments_may_be_any_kind_of_method(self, kind):
        def add(parser):
            parser.add_argument("--threshold", type=int, default=5)
        body = {"classmethod": classmethod(lambda cls, parser: add(parser)),
                "staticmethod": staticmethod(add),
                "method": lambda self, parser: add(parser)}[kind]
        MyOptions = type("MyOptions", (pm.PipelineOptions,), {"add_arguments": body})
        assert MyOptions(["--threshold=9"]).threshold == 9
        assert MyOptions([]).threshold == 5

    def test_flags_come_from_the_command_line_when_none_are_given(self, monkeypatch):
        monkeypatch.setattr(sys, "argv", ["p.py", "--runner=spark", "--bundle_size=7"])
        assert pm.PipelineOptions().runner == "spark"
        p = pm.Pipeline()
        assert (p.options.runner, p.options.bundle_size) == ("spark", 7)
        assert pm.Pipeline(argv=[]).options.runner == "local"   # explicit flags win

    def test_the_command_lines_other_flags_are_passed_over_with_a_warning_at_the_run(
            self, monkeypatch, recwarn):
        monkeypatch.setattr(sys, "argv", ["p.py", "--quiet", "--input", "in.txt", "--bogus"])
        p = pm.Pipeline()
        out = p | pm.Create([1, 2]) | pm.Map(lambda x: x * 10)
        assert not recwarn.list                             # a view may still know them
        with pytest.warns(pm.OptionsWarning, match="--input in.txt --bogus: not pipeline"):
            result = p.run()
        assert sorted(wv.value for wv in result.collect(out)) == [10, 20]

    def test_a_near_miss_of_an_option_on_the_command_line_is_an_error_at_the_run(
            self, monkeypatch, capsys):
        monkeypatch.setattr(sys, "argv", ["p.py", "--streming", "--input=x", "--quiet"])
        p = pm.Pipeline()
        p | pm.Create([1])
        with pytest.raises(SystemExit) as exit:
            p.run()
        assert exit.value.code == 2
        assert capsys.readouterr().err.strip() == (
            "p.py: error: --streming is not a pipeline option; did you mean --streaming?")

    def test_a_near_miss_a_view_knows_is_its_flag_not_a_misspelling(self, monkeypatch, recwarn):
        class MyOptions(pm.PipelineOptions):
            def add_arguments(self, parser):
                parser.add_argument("--worker", default="w0")

        monkeypatch.setattr(sys, "argv", ["p.py", "--worker=w1", "--quiet"])
        options = pm.PipelineOptions()
        assert options.view_as(MyOptions).worker == "w1"
        pm.Pipeline(options=options).run()
        assert not [w for w in recwarn.list if issubclass(w.category, pm.OptionsWarning)]

    def test_an_explicit_near_miss_names_the_option_it_resembles(self):
        with pytest.raises(pm.OptionsError, match=r"unknown option\(s\) --runer=spark; --runer "
                                                  r"is not a pipeline option; did you mean "
                                                  r"--runner\?; known options: "):
            pm.PipelineOptions(["--runer=spark"])
        with pytest.raises(pm.OptionsError, match=r"unknown option\(s\) --zzz; known options"):
            pm.PipelineOptions(["--zzz"])

    def test_view_as_parses_the_flags_with_the_views_own_and_shares_the_values(
            self, monkeypatch, recwarn):
        class MyOptions(pm.PipelineOptions):
            def add_arguments(self, parser):
                parser.add_argument("--input", default="-")

        monkeypatch.setattr(sys, "argv", ["p.py", "--input=a.txt", "--workers=2"])
        options = pm.PipelineOptions()
        mine = options.view_as(MyOptions)
        assert (mine.input, mine.workers) == ("a.txt", 2)
        mine.workers = 3
        assert options.workers == 3                        # one set of values
        pm.Pipeline(options=options).run()
        assert not [w for w in recwarn.list if issubclass(w.category, pm.OptionsWarning)]
        assert options.view_as(pm.PipelineOptions).workers == 3
        with pytest.raises(TypeError, match="PipelineOptions subclass"):
            options.view_as(dict)
        explicit = MyOptions(["--input=b.txt", "--workers=2"])   # a view knows fewer flags
        assert explicit.view_as(pm.PipelineOptions).workers == 2


_SCRIPT = """
import pomset as pm

class MyOptions(pm.PipelineOptions):
    def add_arguments(self, parser):
        parser.add_argument("--threshold", type=int, default=5, help="the smallest value kept")

options = MyOptions()
p = pm.Pipeline(options=options)
kept = p | pm.Create([3, 5, 8]) | pm.Filter(lambda x: x >= options.threshold)
print(sorted(wv.value for wv in p.run().collect(kept)), options.runner)
"""


@pytest.mark.parametrize("argv,code,out,err", [
    (["--threshold=4", "--quiet"], 0, "[5, 8] local", ""),
    (["--threshold=6", "--quiet", "--bogus"], 0, "[8] local", "--bogus: not pipeline options"),
    (["--worker_mode=fast"], 2, "", "p.py: error: argument --worker_mode: invalid choice: "
                                    "'fast' (choose from 'auto', 'threads', 'processes')"),
    (["--runner=flink"], 2, "", "p.py: error: unknown runner 'flink'; available runners:"),
    (["--runer=spark"], 2, "", "p.py: error: --runer is not a pipeline option; did you mean "
                               "--runner?"),
    (["--help"], 0, "--threshold THRESHOLD", ""),
])
def test_a_script_reads_its_command_line_as_a_beam_user_expects(tmp_path, argv, code, out,
                                                                 err):
    """As a user runs it: `python p.py FLAGS`. A bad value is one line on stderr, not a
    traceback; --help lists every flag with its help, the script's own too."""
    script = tmp_path / "p.py"
    script.write_text(_SCRIPT)
    run = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == code, run.stderr
    assert out in run.stdout
    assert err in run.stderr
    if code == 2:
        assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
    if "--help" in argv:
        for flag in ("--runner RUNNER", "--workers N", "--worker_mode", "--schedule",
                     "the smallest value kept"):
            assert flag in run.stdout


def test_data_dependent_window_starting_after_the_element_is_rejected_at_run_time():
    class Ahead(pm.WindowFn):
        def assign_windows(self, timestamp, element):
            start = element[1]               # needs the element, so checked per element
            return [pm.IntervalWindow(start, start + 10)]

    p = new()
    _ = (p | pm.Create([TV(("a", 5), 5), TV(("a", 8), 5)]) | pm.WindowInto(Ahead())
         | pm.GroupByKey())
    with pytest.raises(pm.UserCodeError, match=r"IntervalWindow\(8, 18\).*does not contain"):
        p.run()
