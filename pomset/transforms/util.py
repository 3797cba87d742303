"""Beam's `apache_beam.transforms.util` (`beam.transforms.util`): utility transforms —
batching, keys, regular expressions, strings, logging, reification, encrypted grouping."""
from .._beam_names import missing
from ..sdk.batch_size import BatchSizeEstimator
from ..sdk.batching import (BatchElements, GroupIntoBatches, ShardedKey,
                            SortAndBatchElements, WithLengthBucketKey)
from ..sdk.core import CoGroupByKey, Distinct, Keys, KvSwap, Values
from ..sdk.log_elements import LogElements
from ..sdk.regex import Regex
from ..sdk.reify import Reify
from ..sdk.secret import DecryptMessage, GroupByEncryptedKey, Secret
from ..sdk.shorthands import Reshuffle, WithKeys
from ..sdk.tostring import ToString

#: Beam's private name for GroupByEncryptedKey's decrypting DoFn (its tests subclass it)
_DecryptMessage = DecryptMessage
#: Beam's private name for BatchElements' size estimator (its tests drive it directly)
_BatchSizeEstimator = BatchSizeEstimator

__all__ = ["BatchElements", "CoGroupByKey", "Distinct", "GroupByEncryptedKey", "GroupIntoBatches",
           "Keys", "KvSwap", "LogElements",
           "Regex", "Reify", "Reshuffle", "Secret", "ShardedKey", "SortAndBatchElements", "ToString", "Values", "WithKeys",
           "WithLengthBucketKey"]
__getattr__ = missing(__name__, "apache_beam.transforms.util")
