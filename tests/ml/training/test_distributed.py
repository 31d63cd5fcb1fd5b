"""train_causal_lm under torchrun (2 CPU processes, gloo) matches the single-process run."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from ml.training import train_causal_lm
from tests.ml.conftest import build_loaded
from tests.ml.training.conftest import dsm_pairs, fast_config

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]
SCRIPT = """
import os, sys, torch
torch.set_num_threads(1)
from tests.ml.conftest import build_loaded
from tests.ml.training.conftest import dsm_pairs, fast_config
from ml.training import train_causal_lm
loaded = build_loaded("llama")
train_causal_lm(loaded, dsm_pairs(10), fast_config(epochs=2), output_dir=sys.argv[1])
world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
with open(os.path.join(sys.argv[1], f"world-seen-by-rank-{os.environ['RANK']}"), "w") as seen:
    seen.write(str(world))
if os.environ["RANK"] == "0":
    torch.save(loaded.model.state_dict(), os.path.join(sys.argv[1], "weights.pt"))
"""


def test_two_processes_train_like_one(tmp_path):
    # 10 examples, effective batch 4: the last step of each epoch leaves process 1 without data
    single = build_loaded("llama")
    train_causal_lm(single, dsm_pairs(10), fast_config(epochs=2), output_dir=tmp_path / "one")
    script = tmp_path / "ddp.py"
    script.write_text(textwrap.dedent(SCRIPT))
    torchrun = Path(sys.executable).with_name("torchrun")
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    subprocess.run(
        [str(torchrun), "--nproc_per_node", "2", str(script), str(tmp_path / "two")],
        check=True,
        env=env,
        cwd=REPO,
        capture_output=True,
        timeout=600,
    )
    # Both ranks trained as one group of two (not as two processes of one each, which would
    # give the same weights too: each would train alone on all the data).
    assert [(tmp_path / "two" / f"world-seen-by-rank-{rank}").read_text() for rank in (0, 1)] == ["2", "2"]
    two = torch.load(tmp_path / "two" / "weights.pt")
    for name, value in single.model.state_dict().items():
        assert torch.allclose(value, two[name], atol=1e-6), name
