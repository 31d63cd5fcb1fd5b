"""Training throughput: `train_causal_lm` against a plain `transformers.Trainer` loop.

Same process, same model (the default SmolLM2-135M when converted, else a small random
Llama, named in the output), same DSM-shaped examples (an instruction and a synthetic note of
seq_len/2 to seq_len tokens, a short masked span as the answer, loss on the answer only),
same micro-batch, no accumulation, same precision (bf16 autocast where ours resolves to
it), full fine-tuning, AdamW, cosine schedule. The Trainer gets what a plain recipe gives
it: right padding, labels -100 on prompt and padding, the model's own loss (logits for
every position). Throughput = non-padding tokens / seconds from the first to the last
optimizer step; the loops alternate, after an untimed warm-up run of each, and the best run
of each is compared. `python -m benchmarks training [--steps N] [--threads T]` prints JSON.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time

from benchmarks.machine import describe


def run(
    steps: int = 6,
    seq_len: int = 256,
    micro_batch: int = 4,
    *,
    rounds: int = 2,
    threads: int | None = None,
    model_dir=None,
    seed: int = 0,
    loaded=None,
) -> dict:
    """Measure tokens/s of both loops -> JSON-able dict (a few minutes on 2 CPU cores).

    The loops run alternately `rounds` times each (after one untimed warm-up run of each),
    every run from the same initial weights; the best run of each is compared (the least
    disturbed by other load on a shared machine); all runs are listed. threads: torch CPU
    threads (default: torch's choice). loaded: a LoadedModel to train instead (its weights
    end up trained)."""
    import torch

    from ml.training import CausalLMConfig
    from ml.training.runtime import autocast_dtype

    if threads:
        torch.set_num_threads(threads)
    loaded, model_name = (loaded, loaded.name) if loaded is not None else _model(model_dir)
    pairs = _pairs(loaded.tokenizer, steps * micro_batch, seq_len, seed)
    warm = _pairs(loaded.tokenizer, micro_batch, seq_len, seed + 1)
    config = CausalLMConfig(
        effective_batch_size=micro_batch,
        micro_batch_size=micro_batch,
        max_length=seq_len + 64,
        checkpoint_every=0,
        seed=seed,
    )
    bf16 = autocast_dtype(config.precision, loaded.device) is not None
    initial = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    runs = {"ours": [], "trainer": []}
    for loop, data in [("ours", warm), ("trainer", warm)] + [("ours", pairs), ("trainer", pairs)] * rounds:
        loaded.model.load_state_dict(initial)
        result = _ours(loaded, data, config) if loop == "ours" else _trainer(loaded, data, config, bf16)
        if data is pairs:
            runs[loop].append(result)
    ours = max(runs["ours"], key=lambda r: r["tokens_per_s"])
    trainer = max(runs["trainer"], key=lambda r: r["tokens_per_s"])
    return {
        "model": model_name,
        "device": str(loaded.device),
        "torch_threads": torch.get_num_threads(),
        "precision": "bf16 autocast" if bf16 else "fp32",
        "steps": steps,
        "micro_batch": micro_batch,
        "seq_len_max": seq_len,
        "mean_tokens_per_example": round(ours["tokens"] / len(pairs), 1),
        "mean_answer_tokens": ours["answer_tokens"],
        "ours_tokens_per_s": round(ours["tokens_per_s"], 1),
        "trainer_tokens_per_s": round(trainer["tokens_per_s"], 1),
        "speedup": round(ours["tokens_per_s"] / trainer["tokens_per_s"], 2),
        "ours_s_per_step": round(ours["seconds"] / ours["timed_steps"], 2),
        "trainer_s_per_step": round(trainer["seconds"] / trainer["timed_steps"], 2),
        "all_runs_tokens_per_s": {k: [round(r["tokens_per_s"], 1) for r in v] for k, v in runs.items()},
        "padding_share": padding_share(seq_len, micro_batch, seed=seed),
        "ours_mean_loss": round(ours["mean_loss"], 4),
        "trainer_mean_loss": round(trainer["mean_loss"], 4),
    }


def padding_share(seq_len: int, micro_batch: int, *, effective: int = 128, n: int = 4096, seed: int = 0) -> dict:
    """Share of padded positions in the micro-batches of one epoch of n examples with lengths
    uniform in [seq_len/2, seq_len] (as the benchmark's examples): micro-batches of random
    examples vs ours (sorted by length within each optimizer step of `effective` examples).
    Compute per step scales with padded positions, so this is the throughput bucketing buys."""
    import numpy as np

    from ml.training.batching import step_plan

    lengths = np.random.default_rng(seed).integers(seq_len // 2, seq_len + 1, size=n)

    def share(micro_batches):
        padded = sum(len(mb) * lengths[mb].max() for mb in micro_batches)
        return round(float(1 - lengths.sum() / padded), 4)

    order = np.random.default_rng(seed).permutation(n)
    random_batches = [order[i : i + micro_batch] for i in range(0, n, micro_batch)]
    plan = step_plan(lengths, seed=seed, epoch=0, effective=effective, micro=micro_batch)
    return {
        "effective_batch": effective,
        "random_micro_batches": share(random_batches),
        "sorted_within_step": share([mb for step in plan for mb in step]),
    }


def _model(model_dir):
    from ml.models import DEFAULT_MODEL, ModelNotFoundError, load_model

    try:
        return load_model(DEFAULT_MODEL, model_dir=model_dir, dtype="float32"), DEFAULT_MODEL
    except ModelNotFoundError:
        return random_llama(), "random Llama (hidden 256, 4 layers; SmolLM2 not converted)"


SMALL_LLAMA = dict(
    hidden_size=256, intermediate_size=768, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2
)


def random_llama(tokenizer=None, *, device="cpu", seed: int = 0, name: str = "random-llama", **shape):
    """A randomly initialised Llama (float32, eval mode) as a LoadedModel, built on `device`:
    SMALL_LLAMA unless `shape` gives LlamaConfig fields; `tokenizer`: a small byte-level BPE
    trained here on the benchmark's sentences (no chat template) unless given."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from ml.models import FAMILIES, LoadedModel

    tokenizer = tokenizer if tokenizer is not None else _small_tokenizer()
    device = torch.device(device)
    torch.manual_seed(seed)
    with device:
        model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tokenizer), **{**SMALL_LLAMA, **shape}))
    return LoadedModel(
        model=model.eval(),
        tokenizer=tokenizer,
        family=FAMILIES["llama"],
        name=name,
        device=device,
        dtype=torch.float32,
        path="",
    )


def _small_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from benchmarks.relevance import SENTENCES

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=["<s>", "</s>", "<mask>"],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(SENTENCES * 20, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="</s>")


def _pairs(tokenizer, n: int, seq_len: int, seed: int):
    from benchmarks.relevance import synthetic_note
    from ml.masking import DSM_INSTRUCTION
    from ml.training import TextPair

    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        note = synthetic_note(rng, tokenizer, rng.randint(seq_len // 2, seq_len - 24))
        words = note.split()
        k = rng.randrange(len(words) // 3, len(words) - 3)
        span = rng.randint(1, 3)
        masked = " ".join(words[:k] + ["<mask>"] + words[k + span :])
        pairs.append(TextPair(f"{DSM_INSTRUCTION} {masked}", " ".join(words[k : k + span])))
    return pairs


def _ours(loaded, pairs, config) -> dict:
    from ml.training import train_causal_lm
    from ml.training.encoding import training_encoder

    stamps = []
    with tempfile.TemporaryDirectory() as out:
        train_causal_lm(
            loaded, pairs, config, output_dir=out, on_progress=lambda e: stamps.append((time.perf_counter(), e))
        )
    steps = [t for t, e in stamps if not e.message]
    start = next(t for t, e in stamps if e.message.startswith("started"))
    encoder = training_encoder(loaded, config, loaded.device)  # as train_causal_lm encodes
    encoded = [encoder.encode(p.prompt, p.answer)[0] for p in pairs]
    tokens = sum(len(e.input_ids) for e in encoded)
    seconds = steps[-1] - start
    losses = [e.loss for _, e in stamps if not e.message]
    return {
        "tokens": tokens,
        "seconds": seconds,
        "timed_steps": len(steps),
        "tokens_per_s": tokens / seconds,
        "mean_loss": sum(losses) / len(losses),
        "answer_tokens": round(sum(len(e.input_ids) - e.prompt_len for e in encoded) / len(encoded), 1),
    }


def _trainer(loaded, pairs, config, bf16: bool) -> dict:
    import torch
    from transformers import PrinterCallback, Trainer, TrainerCallback, TrainingArguments

    from ml.training.encoding import training_encoder

    encoder = training_encoder(loaded, config, loaded.device)  # as train_causal_lm encodes
    encoded = [encoder.encode(p.prompt, p.answer)[0] for p in pairs]
    data = [{"input_ids": e.input_ids.tolist(), "prompt_len": e.prompt_len} for e in encoded]
    pad_id = loaded.tokenizer.pad_token_id or 0

    def collate(batch):  # right padding, labels on the answer only
        width = max(len(b["input_ids"]) for b in batch)
        ids = torch.full((len(batch), width), pad_id)
        labels = torch.full((len(batch), width), -100)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, b in enumerate(batch):
            n = len(b["input_ids"])
            ids[row, :n] = torch.tensor(b["input_ids"])
            mask[row, :n] = 1
            labels[row, b["prompt_len"] : n] = ids[row, b["prompt_len"] : n]
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}

    class Stamps(TrainerCallback):
        times: list = []

        def on_train_begin(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter())

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter())

    stamps = Stamps()
    stamps.times = []
    model = loaded.model
    model.train()
    for p in model.parameters():
        p.requires_grad_(True)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            per_device_train_batch_size=config.micro_batch_size,
            gradient_accumulation_steps=1,
            num_train_epochs=1,
            learning_rate=config.lr,
            lr_scheduler_type="cosine",
            warmup_ratio=config.warmup_ratio,
            weight_decay=config.weight_decay,
            adam_epsilon=config.adam_eps,
            max_grad_norm=config.max_grad_norm,
            bf16=bf16,
            use_cpu=loaded.device.type == "cpu",
            report_to=[],
            save_strategy="no",
            logging_strategy="no",
            dataloader_num_workers=0,
            disable_tqdm=True,
            remove_unused_columns=False,
            seed=config.seed,
        )
        trainer = Trainer(model=model, args=args, train_dataset=data, data_collator=collate, callbacks=[stamps])
        trainer.remove_callback(PrinterCallback)  # keep stdout for the JSON
        result = trainer.train()
    model.eval()
    tokens = sum(len(e.input_ids) for e in encoded)
    seconds = stamps.times[-1] - stamps.times[0]
    return {
        "tokens": tokens,
        "seconds": seconds,
        "timed_steps": len(stamps.times) - 1,
        "tokens_per_s": tokens / seconds,
        "mean_loss": float(result.training_loss),
    }


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--model-dir", default=None)
    a = parser.parse_args(argv)
    result = run(a.steps, a.seq_len, a.micro_batch, rounds=a.rounds, threads=a.threads, model_dir=a.model_dir)
    result["machine"] = describe()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
