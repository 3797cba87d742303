"""Beam's `apache_beam.io` (`beam.io`) names for the IO pomset has: text, JSON lines, CSV,
Parquet files and Kafka."""
from ._beam_names import missing
from .sdk.io import (ReadFromCsv, ReadFromJson, ReadFromKafka, ReadFromParquet, ReadFromText,
                     WriteToCsv, WriteToJson, WriteToKafka, WriteToParquet, WriteToText)

__all__ = ["ReadFromCsv", "ReadFromJson", "ReadFromKafka", "ReadFromParquet", "ReadFromText",
           "WriteToCsv", "WriteToJson", "WriteToKafka", "WriteToParquet", "WriteToText"]
__getattr__ = missing(__name__, "apache_beam.io")
