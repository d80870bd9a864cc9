"""``eval --dry-run`` and ``tune --dry-run`` refuse what the real run would refuse: a dry run that
prints an estimate for a metric the run then rejects tells the user the command is fine when it is not."""

from __future__ import annotations

import pytest

from tests.support.cli import run_chunkwise


@pytest.mark.parametrize(
    "command",
    [
        ("eval", "--data", "{data}/eval/rmc_mini", "--json", "{tmp}/out.json"),
        ("tune", "--data", "{data}/eval/xquad_mini", "--chunker", "fixed", "--grid", "size=200"),
    ],
    ids=["eval", "tune"],
)
def test_dry_run_refuses_an_unknown_metric(command, data_dir, tmp_path):
    args = [part.format(data=data_dir, tmp=tmp_path) for part in command]
    done = run_chunkwise(*args, "--metric", "bogus@5", "--dry-run")
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("error: metric 'bogus@5': unknown")
