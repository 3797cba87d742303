"""Beam's `apache_beam.transforms.util` (`beam.transforms.util`): utility transforms —
batching, keys, regular expressions, strings, logging, reification, encrypted grouping."""
from .._beam_names import missing
from ..sdk.batch_size import BatchSizeEstimator
from ..sdk.batching import (BatchElements, GlobalWindowsBatchingDoFn, GroupIntoBatches,
                            ShardedKey, SortAndBatchElements, SortAndBatchElementsDoFn,
                            WindowAwareBatchingDoFn, WindowAwareSortAndBatchElementsDoFn,
                            WithLengthBucketKey)
from ..sdk.core import CoGroupByKey, Distinct, Keys, KvSwap, Values
from ..sdk.log_elements import LogElements
from ..sdk.regex import Regex
from ..sdk.reify import Reify
from ..sdk.secret import DecryptMessage, GroupByEncryptedKey, Secret
from ..sdk.shorthands import Reshuffle, WithKeys
from ..sdk.tostring import ToString
from ..sdk.wait_on import WaitOn
from ..windowing import IdentityWindowFn

# Beam's private names for the pieces its tests drive directly
#: the WindowFn that keeps each element's window (Reshuffle's, in Beam)
_IdentityWindowFn = IdentityWindowFn
#: GroupByEncryptedKey's decrypting DoFn (its tests subclass it)
_DecryptMessage = DecryptMessage
#: BatchElements' size estimator
_BatchSizeEstimator = BatchSizeEstimator
#: BatchElements' DoFns, in the global window and in others
_GlobalWindowsBatchingDoFn = GlobalWindowsBatchingDoFn
_WindowAwareBatchingDoFn = WindowAwareBatchingDoFn
#: SortAndBatchElements' DoFns, in the global window and in others
_SortAndBatchElementsDoFn = SortAndBatchElementsDoFn
_WindowAwareSortAndBatchElementsDoFn = WindowAwareSortAndBatchElementsDoFn

__all__ = ["BatchElements", "CoGroupByKey", "Distinct", "GroupByEncryptedKey",
           "GroupIntoBatches", "Keys", "KvSwap", "LogElements", "Regex", "Reify", "Reshuffle",
           "Secret", "ShardedKey", "SortAndBatchElements", "ToString", "Values", "WaitOn",
           "WithKeys", "WithLengthBucketKey"]
__getattr__ = missing(__name__, "apache_beam.transforms.util")
