"""Shared fixtures: one local Spark session for the whole test run (the Spark runner uses an
active session it did not start as it is), and `runner`, which parametrizes a test over every
runner mode: local (sequential, and parallel in threads and in processes, the threads under
each of the paper's schedulers and under seeded random picks), spark (batch), spark-streaming
(a Structured Streaming query, bounded sources read as streams that end)."""
from __future__ import annotations

import sys
from typing import List

import pytest

# A pipeline built without flags reads the program's command line, as Beam's does; the tests'
# command line is pytest's, none of it a pipeline's.
sys.argv[1:] = []

#: the local runner's modes: its default, the sequential reference, the parallel executor's
#: threads (under its default scheduler, CT, and each other one: the paper's LP, QST and ET,
#: and seeded random picks that try other interleavings) and processes
LOCAL_RUNNERS = ["local", "local-sequential", "local-threads", "local-threads-lp",
                 "local-threads-qst", "local-threads-et", "local-threads-random",
                 "local-processes"]
RUNNERS = LOCAL_RUNNERS + ["spark", "spark-streaming"]
#: the seed of local-threads-random's picks
RANDOM_SCHEDULE_SEED = 11


def runner_flags(runner: str) -> List[str]:
    """The pipeline flags that choose a runner mode: the local runner as it runs by default
    (the ordered-parallel executor, a thread per core), its sequential reference executor,
    the parallel one with three threads (under each scheduler) or two forked processes,
    Spark batch and Spark streaming."""
    if runner == "spark-streaming":
        return ["--runner=spark", "--streaming", "--streaming_until=latest"]
    if runner == "local-sequential":
        return ["--runner=local", "--workers=1"]
    if runner.startswith("local-threads"):
        schedule = runner[len("local-threads-"):] or "ct"
        return ["--runner=local", "--workers=3", "--worker_mode=threads",
                f"--schedule={schedule}", f"--schedule_seed={RANDOM_SCHEDULE_SEED}"]
    if runner == "local-processes":
        return ["--runner=local", "--workers=2", "--worker_mode=processes"]
    return [f"--runner={runner}"]


@pytest.fixture(scope="session")
def spark_session():
    import pomset as pm
    from pomset.runners.spark.session import new_session
    spark = new_session(pm.PipelineOptions(["--spark_master=local[2]",
                                            "--spark_conf=spark.sql.shuffle.partitions=2",
                                            "--spark_conf=spark.ui.enabled=false"]))
    yield spark
    spark.stop()


@pytest.fixture(params=RUNNERS)
def runner(request) -> str:
    if request.param.startswith("spark"):
        request.getfixturevalue("spark_session")
    return request.param


@pytest.fixture(scope="session")
def kafka_broker() -> str:
    """An embedded Kafka-protocol broker (noida-db) for the test run: its bootstrap servers."""
    from pomset.broker import EmbeddedKafka
    broker = EmbeddedKafka()
    broker.start()
    yield broker.bootstrap_servers
    broker.stop()
