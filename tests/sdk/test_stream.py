"""The SDK's pieces that need no portal: lines cut across chunks, the GPU board's merge and its resync on a gap,
and the job file's checks."""

from __future__ import annotations

import pytest
from gpulab._stream import GpuBoard, LineSplitter
from gpulab.jobfile import JobFileError, load_job_file


def test_lines_cut_between_chunks_come_out_whole():
    splitter = LineSplitter()
    assert splitter.feed(b"epo") == []
    assert splitter.feed(b"ch 1\nepoch 2\nlo") == ["epoch 1", "epoch 2"]
    assert splitter.feed("ss \u00e9\n".encode()[:3]) == []
    assert splitter.feed("ss \u00e9\n".encode()[3:]) == ["loss \u00e9"]
    assert splitter.feed(b"no newline") == [] and splitter.flush() == ["no newline"] and splitter.flush() == []


def gpu(node, index=0, **fields):
    return {"node": node, "index": index, **fields}


def test_the_board_merges_updates_field_by_field_and_asks_for_a_snapshot_after_a_gap():
    board = GpuBoard()
    assert board.apply({"type": "update", "seq": 1, "gpus": [gpu("gpu01", util_pct=5)]})  # before the snapshot
    assert board.waiting_for_snapshot and board.records == {}
    board.apply({"type": "snapshot", "seq": 7, "gpus": [gpu("gpu01", util_pct=0, temp_c=40), gpu("gpu02")]})
    assert board.apply({"type": "update", "seq": 8, "gpus": [gpu("gpu01", util_pct=93)]})
    assert [(g.node, g.util_pct, g.temp_c) for g in board.gpus()] == [("gpu01", 93, 40), ("gpu02", None, None)]
    assert board.apply({"type": "update", "seq": 8, "gpus": [gpu("gpu01", util_pct=1)]})  # old news: ignored
    assert board.gpus()[0].util_pct == 93
    assert not board.apply({"type": "update", "seq": 10, "gpus": [gpu("gpu02", util_pct=50)]})  # 9 was lost
    assert board.waiting_for_snapshot and board.gpus()[1].util_pct is None
    assert board.apply({"type": "update", "seq": 11, "gpus": [gpu("gpu02", util_pct=60)]})  # still waiting
    board.apply({"type": "snapshot", "seq": 12, "gpus": [gpu("gpu02", util_pct=70)]})
    assert [(g.node, g.util_pct) for g in board.gpus()] == [("gpu02", 70)]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("- a list\n", "a YAML mapping"),
        ("name: x\ncolour: red\n", "unknown field(s) colour"),
        ("command: {a: 1}\n", "command is a list of arguments"),
        ("name: [\n", "not valid YAML at line 2"),
    ],
)
def test_a_job_file_that_is_not_a_job_says_why_in_one_line(tmp_path, text, says):
    path = tmp_path / "job.yaml"
    path.write_text(text)
    with pytest.raises(JobFileError, match=r"job\.yaml: ") as caught:
        load_job_file(path)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_a_job_file_reads_numbers_in_argv_and_env_as_strings(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("image: python:3.12-slim\ncommand: [python, train.py, --epochs, 3]\nenv: {SEED: 7}\n")
    assert load_job_file(path) == {
        "image": "python:3.12-slim",
        "command": ["python", "train.py", "--epochs", "3"],
        "env": {"SEED": "7"},
    }
