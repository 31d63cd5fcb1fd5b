"""Relevance computed the way the AttnLRP authors' package (lxt 2.1, efficient mode) tells its
users to, saved as those users would: one JSON line a pair with the prompt's `input_ids` and
lxt's `relevance` (`(input_embeds * input_embeds.grad).sum(-1)`, batch of one, `.tolist()`).

    python -m tests.webapp.pipeline.lxt_output MODEL_DIR PAIRS.json OUT.jsonl

PAIRS.json: [{"note": external id, "task": slug, "text": note text, "description": task}, ...].
The prompt is the product's (ml.relevance.encoding.encode_pair, template "en", explain "next"),
as a user must build it for the import to accept it. Run in a child process: lxt patches the
model's module for good (ml.lrp), which must not happen in the test process."""

import json
import sys


def main(model_dir: str, pairs_path: str, out_path: str) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.models.llama import modeling_llama

    from ml.lrp import import_lxt
    from ml.models import family_for
    from ml.prompts import get_template
    from ml.relevance.encoding import encode_pair
    from ml.relevance.imported import context_limit_of

    torch.set_num_threads(1)
    lxt_efficient = import_lxt()  # lxt.efficient, with ml.lrp's placeholder for its ViT module
    from lxt.efficient.models.llama import attnLRP

    lxt_efficient.monkey_patch(modeling_llama, attnLRP)  # as lxt's README: patch, then load
    config = AutoConfig.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32).eval()
    for parameter in model.parameters():  # as lxt's examples: only the input embeddings take a gradient
        parameter.requires_grad = False
    family = family_for(config)
    with open(pairs_path) as handle:
        pairs = json.load(handle)
    with open(out_path, "w") as out:
        for pair in pairs:
            enc = encode_pair(
                tokenizer,
                pair["text"],
                pair["description"],
                template=get_template("en"),
                chat_template_kwargs=dict(family.chat_template_kwargs),
                max_note_tokens=context_limit_of(config),
                include_target=True,
            )
            input_ids = torch.tensor([enc.input_ids])
            input_embeds = model.get_input_embeddings()(input_ids)
            logits = model(inputs_embeds=input_embeds.requires_grad_(), use_cache=False).logits
            max_logit, _ = torch.max(logits[0, -1, :], dim=-1)
            max_logit.backward(max_logit)
            relevance = (input_embeds * input_embeds.grad).float().sum(-1).detach().cpu()
            line = {
                "note": pair["note"],
                "task": pair["task"],
                "input_ids": input_ids.tolist(),
                "relevance": relevance.tolist(),
            }
            out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
