"""Classification heads on cached features (docs/METHOD.md, section Adaptation): one head per task,
Linear(d, 256) -> ReLU -> Dropout(0.1) -> Linear(256, n_options), AdamW lr 1e-3, 20
epochs, batch 32, cross-entropy. The LM is frozen (features.py computed its states once).
Each head is initialised and its batches shuffled from a seed derived from (seed, task), in
a forked RNG, so a head does not depend on the other tasks or on the caller's RNG.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ml.training import refusals
from ml.training.config import HeadConfig
from ml.training.data import LabeledItem
from ml.training.errors import TrainingCancelled, TrainingInputError
from ml.training.progress import ProgressEvent


def make_head(input_dim: int, n_classes: int, config: HeadConfig) -> nn.Module:
    return nn.Sequential(
        nn.Linear(input_dim, config.hidden), nn.ReLU(), nn.Dropout(config.dropout), nn.Linear(config.hidden, n_classes)
    )


@dataclass
class HeadBundle:
    config: HeadConfig
    input_dim: int
    options: dict[str, list[str]]  # task -> its options (the head's output order)
    heads: dict[str, nn.Module] = field(default_factory=dict)

    def predict(self, features: np.ndarray, items: Sequence[LabeledItem]) -> list[str]:
        """The arg-max option of the item's task head, per item."""
        features = _check_features(features, items, self.input_dim)
        missing = sorted({i.task for i in items} - set(self.heads))
        if missing:
            raise TrainingInputError(
                refusals.NO_HEAD, missing=", ".join(missing), trained=", ".join(sorted(self.heads))
            )
        predictions: list[str | None] = [None] * len(items)
        for task, rows in _rows_by_task(items).items():
            head = self.heads[task].eval()
            with torch.inference_mode():
                best = head(torch.from_numpy(features[rows])).argmax(-1).tolist()
            for row, b in zip(rows, best):
                predictions[row] = self.options[task][b]
        return predictions

    def save(self, directory) -> Path:
        from safetensors.torch import save_file

        directory = Path(directory)
        tmp = directory.with_name(f".{directory.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        tasks = sorted(self.heads)
        tensors = {
            f"{n}.{k}": v.contiguous() for n, task in enumerate(tasks) for k, v in self.heads[task].state_dict().items()
        }
        save_file(tensors, tmp / "heads.safetensors")
        (tmp / "heads.json").write_text(
            json.dumps(
                {
                    "config": self.config.to_dict(),
                    "input_dim": self.input_dim,
                    "tasks": [{"task": t, "options": self.options[t]} for t in tasks],
                },
                indent=1,
            )
        )
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(tmp, directory)
        return directory

    @classmethod
    def load(cls, directory) -> HeadBundle:
        from safetensors.torch import load_file

        directory = Path(directory)
        meta = json.loads((directory / "heads.json").read_text())
        tensors = load_file(directory / "heads.safetensors")
        config = HeadConfig.from_dict(meta["config"])
        bundle = cls(config, meta["input_dim"], {t["task"]: t["options"] for t in meta["tasks"]})
        for n, entry in enumerate(meta["tasks"]):
            head = make_head(bundle.input_dim, len(entry["options"]), config)
            head.load_state_dict({k.split(".", 1)[1]: v for k, v in tensors.items() if k.split(".", 1)[0] == str(n)})
            bundle.heads[entry["task"]] = head.eval()
        return bundle


def train_heads(
    features: np.ndarray,
    items: Sequence[LabeledItem],
    config: HeadConfig,
    *,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> HeadBundle:
    """One head per task over the labeled items (unlabeled ones are ignored)."""
    features = _check_features(features, items, None)
    labeled = [i for i, item in enumerate(items) if item.label is not None]
    by_task = _rows_by_task([items[i] for i in labeled])
    bundle = HeadBundle(config, int(features.shape[1]), {})
    total, step = len(by_task) * config.epochs, 0
    for task in sorted(by_task):
        rows = [labeled[r] for r in by_task[task]]
        options = list(items[rows[0]].options)
        if any(list(items[r].options) != options for r in rows):
            raise TrainingInputError(refusals.TASK_OPTIONS, task=repr(task))
        x = torch.from_numpy(features[rows])
        y = torch.tensor([options.index(items[r].label) for r in rows])
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(_task_seed(config.seed, task))
            head = make_head(x.shape[1], len(options), config)
            optimizer = torch.optim.AdamW(head.parameters(), lr=config.lr, weight_decay=config.weight_decay)
            for epoch in range(config.epochs):
                head.train()
                epoch_loss = 0.0
                for batch in torch.randperm(len(rows)).split(config.batch_size):
                    if should_stop is not None and should_stop():
                        raise TrainingCancelled(f"cancelled while training the head of {task!r}", step=step)
                    loss = nn.functional.cross_entropy(head(x[batch]), y[batch])
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    epoch_loss += loss.item() * len(batch)
                step += 1
                if on_progress is not None:
                    on_progress(
                        ProgressEvent(
                            step, total, epoch + 1, epoch_loss / len(rows), config.lr, None, None, f"head {task}"
                        )
                    )
        bundle.heads[task] = head.eval()
        bundle.options[task] = options
    return bundle


def _task_seed(seed: int, task: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"head\x1f{seed}\x1f{task}".encode(), digest_size=8).digest(), "big")


def _check_features(features, items, input_dim) -> np.ndarray:
    features = np.asarray(features, dtype=np.float32)
    if features.ndim != 2 or features.shape[0] != len(items):
        raise TrainingInputError(refusals.FEATURES_SHAPE, items=len(items), shape=features.shape)
    if input_dim is not None and features.shape[1] != input_dim:
        raise TrainingInputError(refusals.FEATURES_COLUMNS, columns=features.shape[1], expected=input_dim)
    return features


def _rows_by_task(items: Sequence[LabeledItem]) -> dict[str, list[int]]:
    rows: dict[str, list[int]] = {}
    for n, item in enumerate(items):
        rows.setdefault(item.task, []).append(n)
    return rows
