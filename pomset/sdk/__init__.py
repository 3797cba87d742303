"""The pipeline author's toolkit: Pipeline, PCollection, transforms, DoFn, CombineFn, options."""
