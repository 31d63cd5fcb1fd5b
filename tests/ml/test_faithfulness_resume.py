"""`python -m ml faithfulness --resume FILE`: a run killed with SIGKILL and resumed prints the same
JSON as an uninterrupted run; a half-written last line is cut off; a checkpoint of other settings is
refused. Real subprocesses on a tiny random Llama saved to a folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ml.conftest import build_loaded

ROOT = Path(__file__).resolve().parents[2]
NOTES = [
    "Vital signs: heart rate 130 bpm, tachycardic, blood pressure 110/70 mmHg.",
    "He has a pacemaker since 2019 and takes amlodipine for hypertension.",
    "The patient denies chest pain. Temperature 38.5 C, oxygen saturation 91%.",
    "Patient is a 67-year-old man admitted for community acquired pneumonia.",
    "Chest X-ray shows right lower lobe consolidation; started on ceftriaxone.",
]
TASKS = ["heart rate", "body temperature", "presence of pacemaker", "clinical finding"]
METHODS = ["grad_input", "attention", "occlusion"]
PAIRS = 16  # enough that a kill after 3 scored pairs lands mid-run; each pair is a few ms


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    import torch

    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("resume")
    tiny = build_loaded("llama")
    tiny.model.save_pretrained(folder / "tiny-llama")
    tiny.tokenizer.save_pretrained(folder / "tiny-llama")
    notes = folder / "notes.jsonl"
    lines = [json.dumps({"id": f"n{i}", "text": NOTES[i % len(NOTES)] * (1 + i % 2)}) for i in range(12)]
    notes.write_text("\n".join(lines) + "\n")
    return folder


def argv(folder: Path, checkpoint: Path | None, *extra: str) -> list[str]:
    out = [sys.executable, "-m", "ml", "faithfulness", "--notes", str(folder / "notes.jsonl")]
    out += ["--model", str(folder / "tiny-llama"), "--device", "cpu", "--dtype", "float32", "--per-pair"]
    out += ["--pairs", str(PAIRS), "--n-resamples", "200"]
    for t in TASKS:
        out += ["--task", t]
    for m in METHODS:
        out += ["--method", m]
    if checkpoint is not None:
        out += ["--resume", str(checkpoint)]
    return out + list(extra)


ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


def run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)


def records(checkpoint: Path) -> int:
    return sum(1 for line in checkpoint.read_bytes().splitlines() if line.startswith(b'{"record"'))


def test_a_run_killed_mid_way_and_resumed_prints_the_same_json_as_an_uninterrupted_one(setup):
    whole = setup / "whole.jsonl"
    done = run(argv(setup, whole))
    assert done.returncode == 0, done.stderr
    expected = json.loads(done.stdout)
    assert expected["summary"]["n_pairs"] == PAIRS and records(whole) == PAIRS

    # killed with SIGKILL once some pairs are scored and others are not
    killed = setup / "killed.jsonl"
    process = subprocess.Popen(
        argv(setup, killed), cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and process.poll() is None:
            if killed.exists() and records(killed) >= 3:
                break
            time.sleep(0.005)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    assert process.returncode == -signal.SIGKILL
    scored = records(killed)
    assert 3 <= scored < PAIRS  # really mid-run
    with open(killed, "ab") as f:  # as if the kill had cut a write short
        f.write(b'{"record": {"note_id": "n1", "ta')

    resumed = run(argv(setup, killed))
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == expected
    # the scored pairs were not scored again, the partial line is gone, every pair once
    assert f"pair {scored}/{PAIRS} scored" not in resumed.stderr and f"pair {PAIRS}/{PAIRS} scored" in resumed.stderr
    assert records(killed) == PAIRS
    assert all(json.loads(line) for line in killed.read_bytes().splitlines())

    # resuming a finished checkpoint computes nothing and prints the same JSON again
    again = run(argv(setup, killed))
    assert again.returncode == 0 and json.loads(again.stdout) == expected and "scored" not in again.stderr


def test_a_checkpoint_of_other_settings_is_refused(setup):
    checkpoint = setup / "other.jsonl"
    first = run(argv(setup, checkpoint, "--pairs", "2", "--random-draws", "2"))
    assert first.returncode == 0, first.stderr
    refused = run(argv(setup, checkpoint, "--pairs", "2", "--random-draws", "3"))
    assert refused.returncode == 2
    assert "belongs to another run: faithfulness differ" in refused.stderr


def test_the_help_names_resume(capsys):
    from ml.__main__ import main

    with pytest.raises(SystemExit):
        main(["faithfulness", "--help"])
    assert "--resume FILE" in capsys.readouterr().out
