"""Shared fixtures: one local Spark session for the whole test run (the Spark runner uses the
active session and leaves it running), and `runner`, which parametrizes a test over every
runner (local, spark batch)."""
from __future__ import annotations

import pytest

RUNNERS = ["local", "spark"]


@pytest.fixture(scope="session")
def spark_session():
    import pomset as pm
    from pomset.runners.spark.session import spark_session as start
    spark, _ = start(pm.PipelineOptions(["--spark_master=local[2]",
                                         "--spark_conf=spark.sql.shuffle.partitions=4"]))
    yield spark
    spark.stop()


@pytest.fixture(params=RUNNERS)
def runner(request) -> str:
    if request.param == "spark":
        request.getfixturevalue("spark_session")
    return request.param
