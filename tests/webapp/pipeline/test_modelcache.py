"""The relevance worker's model cache: one model per process, in the dtype a job asks for."""

import pytest
import torch

from tests.webapp.pipeline.factories import make_model_version
from webapp.pipeline import modelcache


@pytest.fixture
def tiny_model_dir(tmp_path):
    from tests.ml.conftest import build_model, build_tokenizer

    tokenizer = build_tokenizer("chatml")
    build_model("llama", len(tokenizer)).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    yield tmp_path
    modelcache.clear()


def test_the_model_is_loaded_once_and_again_for_another_dtype(db, tiny_model_dir):
    from ml.models import preferred_dtype

    version = make_model_version(str(tiny_model_dir))
    auto = modelcache.loaded_model(version)
    assert auto.dtype == preferred_dtype(auto.device)
    assert modelcache.loaded_model(version, "auto") is auto
    fp32 = modelcache.loaded_model(version, "float32")
    assert fp32 is not auto and fp32.dtype == torch.float32
    assert modelcache.loaded_model(version, "bfloat16").dtype == torch.bfloat16
