"""zsmalloc.lab: the optimizer over several workloads, here and on a dask LocalCluster with two
workers; both give the same frontiers."""

from __future__ import annotations

import os
import shutil

import pytest

import zsmalloc.lab as lab

pytestmark = pytest.mark.skipif(
    not (os.environ.get("ZSMALLOC_BIN") or shutil.which("zsmalloc")),
    reason="the zsmalloc command is not built (scripts/test-python.sh builds it)",
)

WORKLOADS = {
    "small-sizes": ["kernel-test", "--lo", "100", "--hi", "1500", "--step", "200", "-n", "30"],
    "large-sizes": ["kernel-test", "--lo", "1600", "--hi", "4000", "--step", "300", "-n", "30"],
    "dist": ["dist", "--objects", "3000", "--churn", "1000"],
}


def test_one_workload_reports_the_frontier_and_the_references():
    r = lab.optimize(WORKLOADS["dist"], points=4, jobs=1)
    assert [p["label"] for p in r["references"]] == ["classic", "heuristic"]
    pages = [p["pages"] for p in r["points"]]
    assert pages == sorted(pages) and len(pages) >= 2
    assert all(p["table"].startswith("# zsmalloc class table") for p in r["points"])


def test_a_refused_flag_is_a_value_error():
    with pytest.raises(ValueError, match="objective"):
        lab.optimize(["dist"], objective="time")


def test_the_dask_path_on_a_local_cluster_with_two_workers_matches_the_local_one():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
        with distributed.Client(cluster) as client:
            assert len(client.scheduler_info()["workers"]) == 2
            remote = lab.optimize_many(WORKLOADS, client=client, points=3, jobs=1)
    here = lab.optimize_many(WORKLOADS, points=3, jobs=1)
    assert remote == here
    rows = lab.frontier_rows(remote)
    assert {r["workload"] for r in rows} == set(WORKLOADS)
    assert all(r["pages"] > 0 for r in rows)


def test_compare_reports_each_configuration_in_order_with_its_timeline(tmp_path):
    timeline = tmp_path / "timeline.csv"
    r = lab.compare(
        WORKLOADS["dist"],
        {"classic": {}, "heuristic": {"chain_policy": "heuristic"}, "unmerged": {"merge": False}},
        timeline=timeline,
    )
    assert [run["label"] for run in r["runs"]] == ["classic", "heuristic", "unmerged"]
    assert [run["config"]["chain_policy"] for run in r["runs"]] == ["classic", "heuristic", "classic"]
    assert [run["config"]["merge"] for run in r["runs"]] == [True, True, False]
    assert all(run["stores"] == r["runs"][0]["stores"] for run in r["runs"])
    labels = {line.split(",")[0] for line in timeline.read_text().splitlines()[1:]}
    assert labels == {"classic", "heuristic", "unmerged"}


def test_compare_refuses_a_bad_value_and_a_label_it_cannot_pass():
    with pytest.raises(ValueError, match="chain-policy"):
        lab.compare(WORKLOADS["dist"], {"x": {"chain_policy": "sideways"}})
    with pytest.raises(ValueError, match="label"):
        lab.compare(WORKLOADS["dist"], {"a,b": {}})
