"""The Spark runner (`--runner=spark`): pipelines as PySpark DataFrame plans."""
