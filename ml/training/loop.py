"""`train_causal_lm`: the causal-LM training loop (DSM, continual pretraining, SFT).

One optimizer step = `effective_batch_size` examples = micro_batch_size x accumulation x
processes. The loss of a step is the mean cross-entropy over ALL its supervised (answer)
tokens: each micro-batch contributes its token-loss SUM divided by the step's token count,
so accumulation gives exactly the gradient of one big batch however the examples are
grouped. AdamW (eps from the config), warmup + cosine schedule, gradient clipping, bf16
autocast when the precision resolves to bf16 (runtime.py). Data order: batching.py.

Multi-GPU: `accelerate launch --multi_gpu --num_processes N script.py` (or `torchrun
--nproc_per_node N script.py`) where the script calls train_causal_lm; every process
encodes the data, takes its share of each step's micro-batches, and DDP averages the
gradients. Process 0 writes checkpoints and the final model.
With `sharding: "fsdp"` (sharding.py) the model is sharded with FSDP2 instead of DDP-wrapped:
every process writes its shards of a checkpoint, and the final model is gathered on process 0.

Cancel: `should_stop()` is asked before every micro-batch; when True, the state at the last
completed optimizer step (weights, optimizer, scheduler, RNG, step) is saved to
checkpoint-last and TrainingCancelled is raised. `resume=True` continues from
checkpoint-last: same data order, same RNG, so the result equals an uninterrupted run.
checkpoint-last is removed once final/ is written.

Steps and warmup come from schedule.py. The result's `weights_changed` compares a checksum of
the trainable weights (finetune.weights_checksum) taken before training, and before a resume
loads its checkpoint, with one taken at the end: False when no step moved them (e.g. a single
step that warmup gives learning rate 0), so the caller can refuse to keep an untrained model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ml.lrp import assert_not_patched
from ml.training import checkpoint as ckpt_io
from ml.training import refusals, sharding
from ml.training.batching import collate, loss_sum, pad_id, step_plan
from ml.training.config import CausalLMConfig
from ml.training.data import TextPair
from ml.training.encoding import Encoded, training_encoder
from ml.training.errors import TrainingCancelled, TrainingError
from ml.training.finetune import (
    load_trainable,
    make_optimizer,
    prepare_model,
    save_final,
    trainable_parameters,
    weights_checksum,
)
from ml.training.progress import Meter, ProgressEvent, TrainResult
from ml.training.runtime import autocast, autocast_dtype, make_accelerator
from ml.training.schedule import plan_steps
from ml.training.vocab import ensure_mask_token

log = logging.getLogger(__name__)


def train_causal_lm(
    loaded,
    pairs: Sequence[TextPair],
    config: CausalLMConfig,
    *,
    output_dir,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    resume: bool = True,
    mask_token: str | None = None,
) -> TrainResult:
    """Train `loaded.model` in place on prompt -> answer pairs (loss on the answers) and save
    it with its tokenizer to `output_dir/final/`. `mask_token`: a token the prompts use,
    made a single special token first (added, embeddings resized, if the tokenizer lacks it).
    On return `loaded.model` is the trained (for LoRA: merged) model in eval mode."""
    try:
        return _train(loaded, pairs, config, output_dir, on_progress, should_stop, resume, mask_token)
    finally:
        sharding.release()  # the process group of one a sharded run without a launcher made, if any


def _train(loaded, pairs, config, output_dir, on_progress, should_stop, resume, mask_token) -> TrainResult:
    assert_not_patched()
    if not isinstance(config, CausalLMConfig):
        raise TypeError(f"config must be a CausalLMConfig, got {type(config).__name__}")
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    acc = make_accelerator()
    world, rank = acc.num_processes, acc.process_index
    config.accumulation_steps(world)  # effective = micro x accumulation x processes, or ValueError
    emit = _emitter(on_progress, acc.is_main_process)
    torch.manual_seed(config.seed)
    if mask_token:
        ensure_mask_token(loaded, mask_token)
    examples, fingerprint, note = _encode_all(loaded, pairs, config, mask_token, acc.device)
    lengths = [len(e.input_ids) for e in examples]
    steps_per_epoch = math.ceil(len(examples) / config.effective_batch_size)
    plan = plan_steps(config, len(examples))  # schedule.py: the same arithmetic the web app checks at launch
    total = plan.total
    original_dtype = loaded.model.dtype
    amp = autocast_dtype(config.precision, acc.device)
    sharded = sharding.enabled(config)
    model = prepare_model(loaded.model, config)
    if sharded:  # FSDP2 (sharding.py): the optimizer is made over the shards, nothing for accelerate to wrap
        model = sharding.shard(model, config, acc.device, amp)
        if sharding.mixed_precision(amp, acc.device) is not None:
            amp = None  # FSDP computes in bf16 itself; no autocast on top
        checksum = sharding.checksum
    else:
        checksum = weights_checksum
    optimizer = make_optimizer(model, config)
    from transformers import get_scheduler

    scheduler = get_scheduler(config.scheduler, optimizer, num_warmup_steps=plan.warmup, num_training_steps=total)
    starting_weights = checksum(model)  # before a resume loads its checkpoint: the weights we began from
    if not sharded:
        model, optimizer = acc.prepare(model, optimizer)
    step, tokens_before, seconds, history = _resume(
        acc, model, optimizer, scheduler, config, fingerprint, mask_token, output_dir, resume
    )
    history = [ProgressEvent(**h) for h in history]
    pad = pad_id(loaded.tokenizer)
    meter, rng_at_step, plans = Meter(step), ckpt_io.capture_rng(), {}
    saved_step = step  # step 0 needs no checkpoint; a resumed step has one
    loss = None

    def save_checkpoint(message: str):
        nonlocal saved_step
        # Said before the files are written, so a listener can store what it holds for the steps
        # up to here: a process killed after the save and before "checkpoint saved" would
        # otherwise resume past steps whose figures it never stored.
        emit(meter.event(step, total, steps_per_epoch, loss, None, "saving a checkpoint"))
        state = ckpt_io.Checkpoint(
            step,
            tokens_before + meter.tokens,
            seconds + meter.elapsed(),
            asdict(config),
            fingerprint,
            mask_token,
            [asdict(h) for h in history],
            rng=rng_at_step,
        )
        if sharded:  # every process writes its shards into rank 0's staging folder
            tmp = sharding.broadcast(ckpt_io.staging(output_dir) if acc.is_main_process else None)
            sharding.save(tmp, model, optimizer)
            if acc.is_main_process:
                ckpt_io.write(tmp, dataclasses.replace(state, scheduler=scheduler.state_dict()))
                ckpt_io.publish(output_dir, tmp)
        elif acc.is_main_process:
            state.trainable = trainable_parameters(acc.unwrap_model(model))
            state.optimizer, state.scheduler = optimizer.state_dict(), scheduler.state_dict()
            ckpt_io.save(output_dir, state)
        _barrier(acc, sharded)
        saved_step = step
        history.append(emit(meter.event(step, total, steps_per_epoch, loss, None, message)))

    history.append(
        emit(
            meter.event(
                step, total, steps_per_epoch, None, None, (f"resumed at step {step}" if step else "started") + note
            )
        )
    )
    while step < total:  # ---------------------------------------------------------------- the loop
        epoch, index = divmod(step, steps_per_epoch)
        plan = plans.setdefault(
            epoch,
            step_plan(
                lengths,
                seed=config.seed,
                epoch=epoch,
                effective=config.effective_batch_size,
                micro=config.micro_batch_size,
            ),
        )
        mine, weight = plan[index][rank::world], 1.0
        if not mine:  # a short last step leaves this process nothing: run a zero-weighted batch for DDP
            mine, weight = plan[index][:1], 0.0
        step_tokens = sum(examples[i].n_supervised for mb in plan[index] for i in mb)  # all processes
        step_loss = torch.zeros((), device=acc.device)
        for i, micro in enumerate(mine):
            if should_stop is not None and _stop_everywhere(acc, should_stop):
                if step != saved_step:
                    save_checkpoint("checkpoint saved (cancelled)")
                raise TrainingCancelled(
                    f"cancelled at step {step} of {total}",
                    step=step,
                    checkpoint_dir=output_dir / ckpt_io.CHECKPOINT if step else None,
                )
            batch = {
                k: v.to(acc.device) if torch.is_tensor(v) else v
                for k, v in collate([examples[j] for j in micro], pad).items()
            }
            # FSDP reduce-scatters every micro-batch's gradients (no process holds whole ones)
            last = i == len(mine) - 1
            sync = contextlib.nullcontext() if last or sharded else acc.no_sync(model)
            with sync:
                with autocast(acc.device, amp):
                    summed, _ = loss_sum(model, batch)
                acc.backward(summed * (weight * world / step_tokens))
            step_loss += summed.detach() * weight
        trained = [p for p in model.parameters() if p.requires_grad]
        if sharded:  # the norm over every process's shards (a DTensor reduced across them)
            torch.nn.utils.clip_grad_norm_(trained, config.max_grad_norm)
        else:
            acc.clip_grad_norm_(trained, config.max_grad_norm)
        lr = optimizer.param_groups[0]["lr"]
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step, rng_at_step = step + 1, ckpt_io.capture_rng()
        meter.tokens += sum(len(examples[j].input_ids) for mb in plan[index] for j in mb)  # all processes
        loss = float(acc.reduce(step_loss, "sum") if world > 1 else step_loss) / step_tokens
        history.append(emit(meter.event(step, total, steps_per_epoch, loss, lr)))
        if config.checkpoint_every and step % config.checkpoint_every == 0 and step < total:
            save_checkpoint("checkpoint saved")
    # ----------------------------------------------------------------------------------- the end
    tokens, seconds = tokens_before + meter.tokens, seconds + meter.elapsed()
    changed = checksum(model if sharded else acc.unwrap_model(model)) != starting_weights
    if not changed:
        log.warning("the trainable weights did not change in %d steps (learning rate 0 at every step?)", step)
    final_dir = output_dir / "final"
    if sharded:  # every weight gathered, whole, on rank 0 (collective), then a plain model there
        full = sharding.full_state_dict(model)
        trained_model = sharding.rebuild(model, full, config) if acc.is_main_process else None
        del full
    else:
        trained_model = acc.unwrap_model(model)
    if acc.is_main_process:
        final_dir, loaded.model = save_final(trained_model, loaded.tokenizer, config, output_dir, dtype=original_dtype)
        ckpt_io.remove(output_dir)
    _barrier(acc, sharded)
    history.append(emit(meter.event(step, total, steps_per_epoch, loss, None, "finished")))
    return TrainResult(output_dir, final_dir, step, tokens, seconds, loss, history, weights_changed=changed)


def _emitter(on_progress, is_main: bool):
    def emit(event: ProgressEvent) -> ProgressEvent:
        if event.message:
            log.info("step %d/%d: %s", event.step, event.total_steps, event.message)
        if on_progress is not None and is_main:
            on_progress(event)
        return event

    return emit


def _barrier(acc, sharded: bool) -> None:
    """Every process waits for the others (a sharded run of one process has its own group)."""
    if sharded:
        sharding.barrier()
    else:
        acc.wait_for_everyone()


def _stop_everywhere(acc, should_stop) -> bool:
    """should_stop() on any process stops all of them (else DDP would wait forever)."""
    if should_stop():
        acc.set_trigger()
    return acc.check_trigger()


def _encode_all(loaded, pairs, config, mask_token, device) -> tuple[list[Encoded], str, str]:
    """Every pair tokenised (see encoding.py), a fingerprint of the result, a note on cuts
    (and on the resolved max_length when the config leaves it to the device)."""
    encoder = training_encoder(loaded, config, device, keep_text=mask_token)
    max_length = encoder.max_length
    examples, dropped, truncated = [], 0, 0
    for pair in pairs:
        encoded = encoder.encode(pair.prompt, pair.answer)
        dropped += not encoded
        truncated += any(e.truncated for e in encoded)
        examples.extend(encoded)
    if not examples:
        raise TrainingError(refusals.NO_EXAMPLE, pairs=len(pairs), dropped=dropped, max_length=max_length)
    note = f"; max_length {max_length} (auto)" if config.max_length is None else ""
    if dropped or truncated:
        cuts = (
            f"{truncated} of {len(pairs)} examples cut to {max_length} tokens, {dropped} dropped "
            f"(the answer alone does not fit, or the mask could not be kept)"
        )
        log.warning(cuts)
        note += f"; {cuts}"
    digest = hashlib.sha256()
    for e in examples:
        digest.update(np.int64(e.prompt_len).tobytes())
        digest.update(np.int64(len(e.input_ids)).tobytes())
        digest.update(e.input_ids.tobytes())
    return examples, digest.hexdigest(), note


def _resume(acc, model, optimizer, scheduler, config, fingerprint, mask_token, output_dir, resume):
    """(step, tokens, seconds, history) from checkpoint-last, or zeros for a fresh start."""
    folder = ckpt_io.find(output_dir) if resume else None
    if folder is None:
        if not resume:
            ckpt_io.remove(output_dir)
        return 0, 0, 0.0, []
    saved = ckpt_io.load(folder, device=acc.device)
    # Settings added since the checkpoint was written take their defaults.
    changed = ckpt_io.config_changes({**asdict(type(config)()), **saved.config}, asdict(config))
    if changed:
        raise TrainingError(refusals.OTHER_CONFIG, folder=folder, changed=", ".join(changed))
    if saved.data_fingerprint != fingerprint or saved.mask_token != mask_token:
        raise TrainingError(refusals.OTHER_DATA, folder=folder)
    if sharding.enabled(config):
        sharding.load(folder, model, optimizer)
    else:
        if saved.trainable is None:
            raise TrainingError(refusals.SHARDED_STATE, folder=folder)
        load_trainable(acc.unwrap_model(model), saved.trainable)
        optimizer.load_state_dict(saved.optimizer)
    scheduler.load_state_dict(saved.scheduler)
    ckpt_io.restore_rng(saved.rng)
    return saved.step, saved.tokens, saved.seconds, saved.history
