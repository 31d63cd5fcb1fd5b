"""Sharded training (FSDP2, ml/training/sharding.py) on this CPU over gloo.

Two processes under `torchrun --standalone --nproc-per-node 2` train the tiny Llama of
tests/ml/conftest.py with `sharding: "fsdp"`:
  * the loss curve and the final weights match one unsharded process within a tolerance derived
    below;
  * a run killed (SIGKILL) after its step-2 sharded checkpoint resumes from it and ends with the
    very weights and losses of the uninterrupted sharded run;
  * the final folder, gathered on rank 0, loads with transformers and equals the gathered weights.
And in one process (a process group of one): sharded training equals unsharded bit for bit.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from ml.training import train_causal_lm
from ml.training.finetune import weights_checksum
from tests.ml.conftest import build_loaded
from tests.ml.training.conftest import dsm_pairs, fast_config

REPO = Path(__file__).resolve().parents[3]
# 10 examples, effective batch 4 (micro 2): 3 steps an epoch, the last one of 2 examples, which
# leaves process 1 a zero-weighted batch; 2 epochs = 6 steps; a sharded checkpoint every 2 steps.
CONFIG = dict(epochs=2, checkpoint_every=2, sharding="fsdp")
STEPS = 6
KILLED_AFTER = 3  # the kill comes after step 3: the run resumes from step 2's checkpoint
EPS = torch.finfo(torch.float32).eps
SCRIPT = """
import json, os, signal, sys, torch
torch.set_num_threads(1)
from tests.ml.conftest import build_loaded
from tests.ml.training.conftest import dsm_pairs, fast_config
from ml.training import train_causal_lm

CONFIG = json.loads(sys.argv[1])
rank = os.environ["RANK"]


def train(out, on_progress=None):
    loaded = build_loaded("llama")
    result = train_causal_lm(loaded, dsm_pairs(10), fast_config(**CONFIG), output_dir=out, on_progress=on_progress)
    if rank == "0":
        torch.save(loaded.model.state_dict(), os.path.join(out, "gathered.pt"))
        losses = {h.step: h.loss for h in result.history if h.loss is not None}
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump({"losses": losses, "changed": result.weights_changed,
                       "world": torch.distributed.get_world_size()}, f)


def kill_after_step(event):
    if event.step == {killed} and event.loss is not None:
        os.kill(os.getpid(), signal.SIGKILL)


if sys.argv[2] == "first":
    train(sys.argv[3])  # uninterrupted
    train(sys.argv[4], kill_after_step)  # killed: never returns
else:
    train(sys.argv[4])  # resumes from the killed run's checkpoint
"""


def torchrun(tmp_path, stage: str, check: bool) -> subprocess.CompletedProcess:
    script = tmp_path / "sharded.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("{killed}", str(KILLED_AFTER)))
    command = [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc-per-node", "2"]
    done = subprocess.run(
        [*command, str(script), json.dumps(CONFIG), stage, str(tmp_path / "whole"), str(tmp_path / "killed")],
        env=dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert done.returncode == 0, done.stderr[-4000:]
    return done


def one_process(tmp_path, **overrides):
    loaded = build_loaded("llama")
    result = train_causal_lm(loaded, dsm_pairs(10), fast_config(**{**CONFIG, **overrides}), output_dir=tmp_path)
    return loaded, {h.step: h.loss for h in result.history if h.loss is not None}


@pytest.mark.slow
def test_two_sharded_processes_train_like_one_resume_after_a_kill_and_gather_a_loadable_model(tmp_path):
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    torchrun(tmp_path, "first", check=False)  # ends with the kill
    killed = tmp_path / "killed"
    checkpoint = killed / "checkpoint-last"
    assert json.loads((checkpoint / "state.json").read_text())["step"] == 2
    # Sharded: both processes' files in torch.distributed.checkpoint's layout, no whole weights.
    assert (checkpoint / "sharded" / ".metadata").is_file()
    assert len(list((checkpoint / "sharded").glob("*.distcp"))) == 2
    assert not (checkpoint / "trainable.safetensors").exists() and not (killed / "final").exists()
    torchrun(tmp_path, "resume", check=True)

    whole = json.loads((tmp_path / "whole" / "result.json").read_text())
    resumed = json.loads((killed / "result.json").read_text())
    assert whole["world"] == resumed["world"] == 2 and whole["changed"]
    assert len(whole["losses"]) == STEPS

    # Resumed = uninterrupted, exactly: the same shards, optimizer, schedule and data order.
    gathered = torch.load(tmp_path / "whole" / "gathered.pt")
    after_kill = torch.load(killed / "gathered.pt")
    assert resumed["losses"] == whole["losses"]
    assert [n for n in gathered if not torch.equal(gathered[n], after_kill[n])] == []
    assert sorted(p.name for p in killed.iterdir()) == ["final", "gathered.pt", "result.json"]

    # The final folder loads with transformers and holds the gathered weights, bit for bit.
    folder = AutoModelForCausalLM.from_pretrained(killed / "final").state_dict()
    assert folder.keys() == gathered.keys()
    assert [n for n in gathered if not torch.equal(folder[n], gathered[n])] == []
    assert load_file(next((killed / "final").glob("*.safetensors"))).keys() <= gathered.keys()

    # Against one unsharded process. The two runs differ only in the order of fp32 reductions:
    # the loss summed over 2 processes, gradients reduce-scattered (a + b instead of one process
    # accumulating a then b: exact for 2 addends), and the clipping norm computed shard by shard
    # then combined. Each reorders a sum, so each step's update differs by a relative error of a
    # few eps (fp32 eps = 1.19e-7; a sum of n terms: at most ~log2(n) eps pairwise, here < 20 eps),
    # and AdamW's update, ratio of the moments, keeps that relative size (it does not amplify a
    # *relative* gradient error, unlike comparing different accumulation groupings). Over 6 steps
    # the weights (|w| <= ~1.1) drift by at most 6 x 20 eps x max|w|; the loss, a smooth function
    # of weights of this size, moves by the same relative amount. Measured: 0.5 ulp on weights
    # (6e-8), 8e-8 relative on the loss.
    single, single_losses = one_process(tmp_path / "one", sharding="none")
    reference = single.model.state_dict()
    assert gathered.keys() == reference.keys()
    for step, loss in single_losses.items():
        assert abs(whole["losses"][str(step)] - loss) <= STEPS * 20 * EPS * abs(loss), step
    scale = max(t.abs().max().item() for t in reference.values())
    atol = STEPS * 20 * EPS * scale
    far = {n: (gathered[n] - reference[n]).abs().max().item() for n in reference}
    assert max(far.values()) <= atol, (atol, sorted(far.items(), key=lambda kv: -kv[1])[:3])
    assert max(far.values()) > 0  # the two-process run did reorder sums (else the test proves little)


def test_one_sharded_process_trains_bit_for_bit_like_an_unsharded_one_and_resumes_after_a_cancel(tmp_path):
    """A process group of one shards nothing apart: the same operations in the same order. Its
    cancel writes a sharded checkpoint, and the resumed run ends as the uninterrupted one."""
    from ml.training import TrainingCancelled

    plain, plain_losses = one_process(tmp_path / "plain", sharding="none", checkpoint_every=0)
    config = fast_config(**CONFIG)
    asked = []

    def stop_at_step_4():  # asked before each micro-batch (2 a step, 1 for the short last one)
        asked.append(1)
        return len(asked) > 7  # steps 1-3 take 5 micro-batches, step 4 two: stop at step 5's first

    with pytest.raises(TrainingCancelled) as cancelled:
        train_causal_lm(
            build_loaded("llama"), dsm_pairs(10), config, output_dir=tmp_path / "sharded", should_stop=stop_at_step_4
        )
    assert cancelled.value.step == 4
    assert (tmp_path / "sharded" / "checkpoint-last" / "sharded" / ".metadata").is_file()
    assert not torch.distributed.is_initialized()  # the group of one is gone after the run
    sharded = build_loaded("llama")
    result = train_causal_lm(sharded, dsm_pairs(10), config, output_dir=tmp_path / "sharded")
    assert {h.step: h.loss for h in result.history if h.loss is not None} == plain_losses
    assert weights_checksum(sharded.model) == weights_checksum(plain.model)
    assert type(sharded.model) is type(plain.model)  # rank 0 gets a plain transformers model back
    assert not torch.distributed.is_initialized()


def test_zero2_keeps_gathered_weights_to_the_backward_and_trains_bit_for_bit_like_unsharded(tmp_path):
    from torch.distributed.fsdp import FSDPModule
    from torch.distributed.tensor import DTensor

    from ml.training import sharding

    plain, plain_losses = one_process(tmp_path / "plain", sharding="none", epochs=1, checkpoint_every=0)
    zero2, zero2_losses = one_process(tmp_path / "zero2", sharding="zero2", epochs=1, checkpoint_every=0)
    assert zero2_losses == plain_losses
    assert weights_checksum(zero2.model) == weights_checksum(plain.model)

    layers = []
    for name in ("fsdp", "zero2"):  # what each setting asks of FSDP2, on a model sharded in a group of one
        model = build_loaded("llama").model
        sharding.shard(model, fast_config(sharding=name), torch.device("cpu"), None)
        layer = model.model.layers[0]
        assert isinstance(layer, FSDPModule)
        model(input_ids=torch.tensor([[1, 2, 3]]))  # after a forward: resharded (fsdp) or still whole (zero2)
        layers.append(isinstance(layer.self_attn.q_proj.weight, DTensor))  # a shard, or the whole weight
        sharding.release()
    assert layers == [True, False]
