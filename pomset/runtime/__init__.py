"""What every runner hosts, written once (see docs/architecture.md): a runner is an adapter
around this layer (storage, timers' persistence, transport) and contains no copy of it.

- `timers`: the one timer service (both time domains, lazy invalidation, holds, saved slots)
  and the keyed store protocol its clients keep their keys' states behind;
- `kernel_host`: the GroupAlsoByWindow kernel's host (a timer service client): clock order
  within a step, the batch run to the end;
- `stateful_dofn`: the stateful DoFn host (a timer service client): state cells, user timers,
  window expiry;
- `timed_combine`: a windowed combine under the timed watermark trigger, held a window at a
  time (Spark streaming's host of that grouping);
- `elementwise`: ParDo (`DoFnRunner`) and WindowInto over bundles, user errors;
- `batches`: batched DoFns' batches: elements in and out of them, and their outputs' metadata;
- `side_inputs`: side elements by window, main elements waiting for their side windows;
- `reads`: bounded file reads in bundles, malformed records as dead letters;
- `test_stream`: a TestStream's steps as (elements, watermark, clock);
- `watermarks`: the output-watermark rule; `markers`: typed channel markers and ranges;
- `deployment`, `fusion`: typed template steps deployed as parallel instances, fused Sorts.

It imports no runner and no pyspark."""
