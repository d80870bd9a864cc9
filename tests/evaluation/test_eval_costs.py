"""Cost and time aggregation per stage, and chunk-size statistics."""

from __future__ import annotations

import pytest

from chunkwise.evaluation.chunk_stats import chunk_stats
from chunkwise.evaluation.costs import CostRecorder, StageCost, merge_stages, total


def test_records_of_a_stage_are_summed_in_first_seen_order() -> None:
    merged = merge_stages(
        [
            StageCost("chunk", seconds=1.0),
            StageCost("embed", seconds=2.0, calls=1, input_tokens=100, cost_usd=0.01),
            StageCost("chunk", seconds=0.5, calls=2, output_tokens=7),
        ]
    )
    assert merged == (
        StageCost("chunk", seconds=1.5, calls=2, output_tokens=7),
        StageCost("embed", seconds=2.0, calls=1, input_tokens=100, cost_usd=0.01),
    )
    assert total(merged) == StageCost("total", 3.5, 3, 100, 7, 0.01)
    assert StageCost.from_dict(merged[1].to_dict()) == merged[1]


def test_recorder_times_a_stage_even_when_it_raises() -> None:
    recorder = CostRecorder()
    with recorder.timed("parse"):
        pass
    with pytest.raises(RuntimeError), recorder.timed("index"):
        raise RuntimeError("boom")
    recorder.add(StageCost("index", calls=3))
    stages = recorder.stages()
    assert [s.stage for s in stages] == ["parse", "index"]
    assert stages[1].calls == 3
    assert all(s.seconds >= 0.0 for s in stages)


def test_chunk_stats_summary_and_shared_bins() -> None:
    stats = chunk_stats([300, 10, 40, 100, 40])
    assert stats.lengths == (10, 40, 40, 100, 300)
    summary = stats.summary()
    assert (summary["count"], summary["min"], summary["max"], summary["median"]) == (5, 10, 300, 40)
    assert summary["mean"] == pytest.approx(98.0)
    # bins [0,50) [50,100) [100,300]: the last bin is closed.
    assert stats.histogram([0, 50, 100, 300]) == [3, 0, 2]
    assert chunk_stats([]).summary()["count"] == 0
    assert type(stats).from_dict(stats.to_dict()) == stats
