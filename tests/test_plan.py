"""The runner-neutral plan: a pipeline lowers to one node per primitive, each of the kind its
transform declares, with the facts its translation needs and the element-wise chains a
runner may fuse; a transform without a kind, or a kind a runner has no translator for, is a
clear error naming it and its label; an extension's own translator is the one used."""
from __future__ import annotations

import pyarrow as pa
import pytest

import pomset as pm
from pomset.runtime import plan
from pomset.runtime.plan import TranslatorTable, UntranslatableError, lower
from pomset.sdk.errors import PipelineConstructionError
from pomset.sdk.ptransform import Primitive
from pomset.traces.dgs import DGS

from test_dgs_consistency import counter_fork, counter_join, counter_trace, counter_update


def _stateful():
    from pomset.sdk.userstate import CombiningValueStateSpec

    class Count(pm.DoFn):
        N = CombiningValueStateSpec("n", sum)

        def process(self, kv, n=pm.DoFn.StateParam(N)):
            n.add(1)
            yield kv[0], n.read()
    return Count()


class Upper(pm.DoFn):
    def process(self, x):
        yield x.upper()


def _kinds(p):
    return {n.label: n.kind for n in lower(p)}


def test_every_kind_lowers_from_its_primitive(tmp_path, kafka_broker):
    (tmp_path / "in.txt").write_text("a\nb\n")
    p = pm.Pipeline(argv=["--quiet"])
    words = p | "Read" >> pm.ReadFromText(str(tmp_path / "in.txt"))
    made = p | "Make" >> pm.Create(["c", "d"])
    stream = p | "Stream" >> pm.TestStream().add_elements(["e"])
    kafka, _ = p | "Kafka" >> pm.ReadFromKafka(kafka_broker, "plan-topic",
                                               until="latest").with_exception_handling()
    both = (words, made, stream) | "Both" >> pm.Flatten()
    pairs = (both | "Up" >> pm.ParDo(Upper()) | "Pair" >> pm.Map(lambda w: (w, 1))
             | "Win" >> pm.WindowInto(pm.FixedWindows(10)))
    pairs | "Sum" >> pm.CombinePerKey(sum) | "Write" >> pm.WriteToText(str(tmp_path / "out"))
    pairs | "Count" >> pm.ParDo(_stateful())
    kafka | "Out" >> pm.WriteToKafka(kafka_broker, "plan-out")
    typed = (p | "Items" >> pm.Create([pm.TimestampedValue((1, 1), 1)])
             | "Typed" >> pm.Typed(pm.U(int, int), period=10))
    typed | "Ordered" >> pm.OpStateless(on_item=lambda k, v, emit: emit(k, v))
    typed | "Plus" >> pm.OPlus(advance=10, size=10, keys=lambda v: [v], initial=lambda: 0,
                               update=lambda s, k, v: s + 1)
    counts = (p | "Counts" >> pm.Create([pm.TimestampedValue(((("i", 1)), 1), 1)])
              | "CTyped" >> pm.Typed(counter_trace((1,)), period=10))
    counts | DGS(init=dict, update=counter_update, fork=counter_fork, join=counter_join,
                 trace=counter_trace((1,)), label="Counter")
    streams = [pm.dgs.Stream("i", lambda: iter([]), name="s")]
    p | "Streams" >> pm.dgs.ReadStreams(streams, pm.TraceType({"i": int}))
    kinds = _kinds(p)
    assert kinds == {
        "Read": plan.READ, "Make": plan.READ, "Stream": plan.DRIVER_READ,
        "Kafka": plan.KAFKA_READ, "Both": plan.FLATTEN, "Up": plan.ELEMENTWISE,
        "Pair": plan.ELEMENTWISE, "Win": plan.ASSIGN_WINDOWS, "Sum": plan.GROUP,
        "Write": plan.SINK, "Count": plan.STATEFUL_PARDO, "Out": plan.KAFKA_WRITE,
        "Items": plan.READ, "Typed": plan.TYPED, "Ordered": plan.TEMPLATE, "Plus": plan.OPLUS,
        "Counts": plan.READ, "CTyped": plan.TYPED, "Counter": plan.DGS,
        "Streams": plan.DGS_READ}
    assert set(kinds.values()) == set(plan.KINDS)
    nodes = lower(p)
    assert nodes.node("Make").makes_bundles and not nodes.node("Read").makes_bundles
    assert nodes.node("Kafka").dead_letter_tag == "bad" and nodes.node("Make").dead_letter_tag is None
    assert nodes.node("Up").has_dofn and not nodes.node("Pair").has_dofn
    sum_node = nodes.node("Sum")
    assert sum_node.strategy is sum_node.inputs[0].windowing
    assert sum_node.reducer() is not sum_node.reducer()   # a factory: a reducer per call
    assert nodes.node("Write").graph is p.nodes[[n.label for n in p.nodes].index("Write")]


def test_chains_are_the_maximal_runs_of_elementwise_steps():
    p = pm.Pipeline(argv=["--quiet"])
    src = p | "Src" >> pm.Create([1, 2, 3])
    a = src | "A" >> pm.Map(lambda x: x + 1) | "B" >> pm.Filter(lambda x: x > 1)
    c = a | "C" >> pm.FlatMap(lambda x: [x, x])
    c | "D" >> pm.Map(str)          # C's output has two readers: D and E start chains
    c | "E" >> pm.Map(lambda x: -x) | "F" >> pm.Map(abs)
    side = p | "Side" >> pm.Create([10])
    a | "G" >> pm.Map(lambda x, s: x + s, pm.AsSingleton(side))   # a side input: its own
    grouped = (src | "K" >> pm.Map(lambda x: (x % 2, x)) | "GBK" >> pm.GroupByKey()
               | "V" >> pm.Map(lambda kv: kv[0]))
    result = lower(p)
    chains = [[n.label for n in chain] for chain in result.chains]
    assert chains == [["A", "B"], ["C"], ["D"], ["E", "F"], ["G"], ["K"], ["V"]]
    assert result.chain_of(result.node("F")) == (result.node("E"), result.node("F"))
    assert result.chain_of(result.node("GBK")) == ()
    assert result.node("B").passes_elements and not result.node("A").passes_elements
    assert result.producer(grouped).label == "V"


def test_a_recorded_pcollection_ends_a_chain():
    p = pm.Pipeline(argv=["--quiet"])
    a = p | pm.Create([1]) | "A" >> pm.Map(lambda x: x)
    a.keep()
    a | "B" >> pm.Map(lambda x: x)
    assert [[n.label for n in c] for c in lower(p).chains] == [["A"], ["B"]]


def test_column_native_steps_carry_their_input_schema():
    p = pm.Pipeline(argv=["--quiet"])
    rows = p | "Rows" >> pm.Create([{"x": 1, "y": 2.0}], schema={"x": int, "y": float})
    rows | "Keep" >> pm.Filter(pm.col("x") > 0) | "Fn" >> pm.Filter(lambda r: r.x > 0)
    result = lower(p)
    keep, fn = result.node("Keep"), result.node("Fn")
    assert keep.native and not fn.native
    assert keep.schema == pa.schema([("x", pa.int64()), ("y", pa.float64())])
    assert result.node("Rows").schema is None   # a source has no input


class Reverse(Primitive):
    """A primitive that declares no plan kind."""

    def outputs(self, node):
        return {None: node.inputs[0].derive()}


def test_a_transform_without_a_plan_kind_is_named_with_its_label():
    p = pm.Pipeline(argv=["--quiet"])
    p | pm.Create([1]) | "Backwards" >> Reverse()
    with pytest.raises(PipelineConstructionError, match=r"Reverse \(Backwards\) declares no plan kind"):
        lower(p)


def test_an_unregistered_kind_names_the_runner_the_transform_and_its_label():
    p = pm.Pipeline(argv=["--quiet"])
    p | pm.Create([1]) | "Twice" >> pm.Map(lambda x: 2 * x)
    table = TranslatorTable("toy")
    table.register(plan.READ, lambda node: node.label)
    nodes = lower(p).nodes
    assert table.translate(nodes[0]) == "Create"
    with pytest.raises(UntranslatableError,
                       match=r"the toy runner cannot run Map \(Twice\): no translator for "
                             r"plan kind 'elementwise'"):
        table.translate(nodes[1])
    with pytest.raises(ValueError, match="no plan kind 'nonsense'"):
        table.register("nonsense", len)


def test_spark_streaming_names_what_it_has_no_translator_for():
    """The streaming table holds the core's kinds and those of the extensions that stream;
    an O+ step does not stream on Spark, and translating one names the runner, the transform
    and its label, as the batch table would for a kind it lacks."""
    from pomset.runners.spark.extensions import batch_table, streaming_table
    p = pm.Pipeline(argv=["--quiet"])
    src = p | pm.Create([pm.TimestampedValue(1, 1)]) | "Typed" >> pm.Typed(pm.U(pm.Unit, int), period=10)
    src | "Plus" >> pm.OPlus(advance=10, size=10, keys=lambda v: [v], initial=lambda: 0,
                             update=lambda s, k, v: s + 1)
    table = streaming_table()
    assert {plan.KAFKA_READ, plan.TEMPLATE, plan.TYPED, plan.GROUP} <= set(
        k for k in plan.KINDS if k in table)
    assert plan.OPLUS not in table and plan.OPLUS in batch_table()
    with pytest.raises(UntranslatableError,
                       match=r"the Spark streaming runner cannot run OPlus \(Plus\): no "
                             r"translator for plan kind 'oplus'"):
        table.translate(lower(p).node("Plus"), None)


def test_an_extension_registers_its_own_translator():
    table = TranslatorTable("toy")

    @table.register(plan.ELEMENTWISE)
    def elementwise(node, scale):
        return ("core", node.label, scale)

    @table.register(plan.OPLUS)
    def oplus(node, scale):   # an extension's module registers its kind
        return ("oplus", node.label, scale)

    p = pm.Pipeline(argv=["--quiet"])
    src = p | pm.Create([pm.TimestampedValue(1, 1)]) | "Typed" >> pm.Typed(pm.U(pm.Unit, int), period=10)
    src | "Plus" >> pm.OPlus(advance=10, size=10, keys=lambda v: [v], initial=lambda: 0,
                             update=lambda s, k, v: s + 1)
    src | "Id" >> pm.Map(lambda x: x)
    result = lower(p)
    assert table.translate(result.node("Plus"), 3) == ("oplus", "Plus", 3)
    assert table.translate(result.node("Id"), scale=2) == ("core", "Id", 2)
    assert elementwise.__name__ == "elementwise"   # the decorator gives the function back
    assert plan.TYPED not in table and plan.OPLUS in table


def test_a_node_carries_its_dead_letter_tag_and_whether_its_source_ends():
    p = pm.Pipeline(argv=["--quiet"])
    forever = p | "Forever" >> pm.ReadFromKafka("localhost:9", "plan-topic")
    ended = p | "Ended" >> pm.ReadFromKafka("localhost:9", "plan-topic", until="latest")
    good, _ = ((forever, ended) | pm.Flatten()
               | "Parse" >> pm.Map(int).with_exception_handling(dead_letter_tag="unparsed"))
    result = lower(p)
    assert result.node("Forever").never_ends and not result.node("Ended").never_ends
    assert result.node("Parse").dead_letter_tag == "unparsed"
    assert result.node("Forever").dead_letter_tag is None
