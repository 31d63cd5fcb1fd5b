"""ml.prompts and ml.relevance on tiny random models; a few checks on the real SmolLM2.

AttnLRP runs only in the spawned `patched_child` (lxt patches are process-global)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from ml.prompts import EN, ES, IT, PromptTemplate, build_prompt, get_template
from ml.relevance import compute_relevance, encode_pair, normalise_scores
from tests.ml.conftest import build_loaded, build_tokenizer

NOTE = "Vital signs: heart rate 130 bpm, tachycardic. He has a pacemaker since 2019."
NOTES = [
    NOTE,
    "Chest X-ray shows right lower lobe consolidation.",
    "The patient denies chest pain. Temperature 38.5 C, oxygen saturation 91%.",
    "He takes amlodipine for hypertension.",
]
TASKS = ["heart rate", "presence of pacemaker", "body temperature", "hypertension"]


def note_token_texts(tokenizer, note, task, **kwargs):
    enc = encode_pair(tokenizer, note, task, **kwargs)
    ids = np.asarray(enc.input_ids)[enc.note_index]
    return enc, [tokenizer.decode([i]) for i in ids]


# ---- prompts ----


def test_builtin_templates_are_the_papers():
    assert (
        get_template(None).text == EN == "{note} Given the patient's medical history, the following is observed {task}"
    )
    assert get_template("it").text == IT == "{note}\n Data la storia del paziente, nel paziente si riscontra {task}"
    assert (
        get_template("es").text
        == ES
        == "{note} Dados los antecedentes médicos del paciente, se observa lo siguiente {task}"
    )
    assert [get_template(name).neutral for name in ("en", "it", "es")] == ["the patient", "il paziente", "el paciente"]


@pytest.mark.parametrize(
    "bad",
    [
        "{note} only the note",
        "the task {task}",
        "{task} before {note}",
        "{note}{task}",
        "{note} x {task} {note}",
        "{note} x {item}",
        "{note} observed {task}" + "x" * 41,
    ],
)
def test_it_refuses_an_invalid_template(bad):
    with pytest.raises(ValueError):
        PromptTemplate(bad)


def test_custom_template_with_braces_in_the_note():
    tokenizer = build_tokenizer("plain")
    template = get_template("Note: {note}. Finding: {task}")
    note = "dict {a: 1} and {note} literally"
    built = build_prompt(tokenizer, template, note, "heart rate")
    assert built.text[slice(*built.note_span)] == note
    assert built.text[slice(*built.task_span)] == "heart rate"


def test_chat_prompt_puts_the_task_in_the_assistant_turn():
    tokenizer = build_tokenizer("chatml")
    built = build_prompt(tokenizer, get_template("en"), NOTE, "heart rate")
    assert built.chat
    assert built.text.startswith("<|im_start|>system\n")
    assert (
        f"<|im_start|>user\n{NOTE} Given the patient's medical history, the following is observed<|im_end|>"
        in built.text
    )
    assert built.text[built.task_span[0] - len("<|im_start|>assistant\n") :].startswith(
        "<|im_start|>assistant\nheart rate"
    )


def test_prompt_without_chat_template_starts_with_bos():
    tokenizer = build_tokenizer("plain")
    built = build_prompt(tokenizer, get_template("en"), NOTE, "heart rate")
    assert not built.chat
    assert built.text == "<|im_start|>" + EN.replace("{note}", NOTE).replace("{task}", "heart rate")


# ---- encoding: offsets, exclusions, target ----


@pytest.mark.parametrize("kind", ["chatml", "gemma", "plain"])
def test_offsets_map_back_to_the_exact_note_text(kind):
    tokenizer = build_tokenizer(kind)
    enc, texts = note_token_texts(tokenizer, NOTE, "heart rate")
    assert enc.offsets.dtype == np.int32 and enc.offsets.shape == (len(texts), 2)
    for (start, end), text in zip(enc.offsets, texts):
        assert NOTE[start:end].strip() == text.replace("\u2581", " ").strip()
    covered = "".join(NOTE[s:e] for s, e in enc.offsets)
    assert covered == NOTE


def test_offsets_of_non_ascii_notes_stay_inside_the_note():
    tokenizer = build_tokenizer("chatml")
    note = "Proteinuria ≥3 g/day, età 14 anni — café."
    enc = encode_pair(tokenizer, note, "heart rate")
    assert enc.offsets.min() >= 0 and enc.offsets.max() <= len(note)
    assert np.all(np.diff(enc.offsets[:, 0]) >= 0)
    covered = np.zeros(len(note), bool)
    for s, e in enc.offsets:
        covered[s:e] = True
    assert covered.all()


@pytest.mark.parametrize("kind", ["chatml", "gemma", "plain"])
def test_special_tokens_and_template_text_are_excluded(kind):
    tokenizer = build_tokenizer(kind)
    enc, texts = note_token_texts(tokenizer, NOTE, "heart rate")
    special_ids = set(tokenizer.all_special_ids)
    assert not special_ids & set(np.asarray(enc.input_ids)[enc.note_index].tolist())
    joined = "".join(texts)
    for template_word in ("Given", "observed", "assistant", "system"):
        assert template_word not in joined
    assert len(enc.input_ids) > len(enc.note_index) + 5  # the prompt has more than the note


@pytest.mark.parametrize("kind", ["chatml", "gemma", "plain"])
def test_the_target_is_the_middle_token_of_the_task(kind):
    tokenizer = build_tokenizer(kind)
    task = "presence of pacemaker"
    built = build_prompt(tokenizer, get_template("en"), NOTE, task)
    enc = tokenizer(built.text, add_special_tokens=False, return_offsets_mapping=True)
    in_task = [
        i
        for i, (s, e) in enumerate(enc["offset_mapping"])
        if e > s and s < built.task_span[1] and e > built.task_span[0]
    ]
    middle = in_task[(len(in_task) - 1) // 2]
    before = encode_pair(tokenizer, NOTE, task)
    through = encode_pair(tokenizer, NOTE, task, include_target=True)
    assert before.target_id == enc["input_ids"][middle]
    assert before.input_ids == enc["input_ids"][:middle]
    assert through.input_ids == enc["input_ids"][: middle + 1]


@pytest.mark.parametrize("side", ["right", "left"])
def test_long_notes_are_truncated_never_the_task(side):
    tokenizer = build_tokenizer("chatml")
    full = encode_pair(tokenizer, NOTE, "heart rate")
    cut = encode_pair(tokenizer, NOTE, "heart rate", max_note_tokens=5, truncate=side)
    assert cut.truncated and not full.truncated
    assert 4 <= len(cut.note_index) <= 6  # in-context tokenisation may differ by one at the cut
    assert cut.target_id == full.target_id
    assert cut.input_ids[-3:] == full.input_ids[-3:]  # the template and task part are intact
    if side == "right":
        assert cut.offsets[0, 0] == 0 and cut.offsets[-1, 1] < len(NOTE)
    else:
        assert cut.offsets[0, 0] > 0 and cut.offsets[-1, 1] == len(NOTE)


def test_empty_note_is_a_clear_error(tiny_llama):
    for note in ("", "   \n"):
        with pytest.raises(ValueError, match="note text is empty"):
            compute_relevance(tiny_llama, [note], ["heart rate"], method="attention")


def test_bad_arguments_are_clear_errors(tiny_llama):
    with pytest.raises(ValueError, match="same length"):
        compute_relevance(tiny_llama, [NOTE, NOTE], ["heart rate"])
    with pytest.raises(ValueError, match="unknown method"):
        compute_relevance(tiny_llama, [NOTE], ["heart rate"], method="shap")
    with pytest.raises(ValueError, match="task description is empty"):
        compute_relevance(tiny_llama, [NOTE], [" "], method="attention")


# ---- relevance on tiny models ----


@pytest.mark.parametrize("method", ["grad_input", "attention"])
def test_each_method_returns_normalised_note_scores(tiny, method):
    results = compute_relevance(tiny, NOTES, TASKS, method=method)
    assert len(results) == len(NOTES)
    for note, r in zip(NOTES, results):
        n = len(r.offsets)
        assert n > 0 and r.offsets.dtype == np.int32
        assert r.raw_scores.shape == r.scores.shape == (n,)
        assert r.raw_scores.dtype == r.scores.dtype == np.float32
        assert np.isfinite(r.raw_scores).all()
        assert r.scores.min() >= 0 and r.scores.max() == pytest.approx(1.0)
        assert r.offsets[-1, 1] == len(note)
        assert r.target_token.strip()
    if method == "attention":
        assert all((r.raw_scores > 0).all() for r in results)


@pytest.mark.parametrize("method", ["grad_input", "attention"])
def test_batched_results_equal_one_by_one(tiny, method):
    batched = compute_relevance(tiny, NOTES, TASKS, method=method, batch_size=4)
    for note, task, b in zip(NOTES, TASKS, batched):
        alone = compute_relevance(tiny, [note], [task], method=method, batch_size=1)[0]
        np.testing.assert_array_equal(b.offsets, alone.offsets)
        assert torch.allclose(
            torch.from_numpy(b.raw_scores),
            torch.from_numpy(alone.raw_scores),
            rtol=1e-4,
            atol=1e-5 * float(np.abs(alone.raw_scores).max()),
        )  # fp32 rounding
        assert b.target_token == alone.target_token


def child_batched_vs_alone(family):
    from ml.relevance import compute_relevance

    loaded = build_loaded(family)
    batched = compute_relevance(loaded, NOTES, TASKS, method="attnlrp", batch_size=4)
    alone = [compute_relevance(loaded, [n], [t], method="attnlrp", batch_size=1)[0] for n, t in zip(NOTES, TASKS)]
    return [r.raw_scores for r in batched], [r.raw_scores for r in alone]


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_attnlrp_batched_results_equal_one_by_one(family, patched_child):
    batched, alone = patched_child.apply(child_batched_vs_alone, (family,))
    for b, a in zip(batched, alone):
        assert torch.allclose(torch.from_numpy(b), torch.from_numpy(a), rtol=1e-4, atol=1e-6 * float(np.abs(a).max()))


def child_attnlrp_span_and_contrastive(family):
    """In the patched child: AttnLRP "span" against the per-token sum (the hand-written reference
    runs the same lxt-patched modules), and batched vs one-by-one for "span" and "contrastive"."""
    from ml.relevance import compute_relevance

    loaded = build_loaded(family)
    task = "presence of pacemaker"
    span = compute_relevance(loaded, [NOTE], [task], method="attnlrp", explain="span")[0].raw_scores
    maps, _ = per_token_targets(loaded, NOTE, task)
    out = {"sum": (span, np.sum(maps, axis=0))}
    for explain in ("span", "contrastive"):
        batched = compute_relevance(
            loaded, CONTRASTIVE_NOTES, CONTRASTIVE_TASKS, method="attnlrp", explain=explain, batch_size=4
        )
        alone = [
            compute_relevance(loaded, [n], [t], method="attnlrp", explain=explain, batch_size=1)[0]
            for n, t in zip(CONTRASTIVE_NOTES, CONTRASTIVE_TASKS)
        ]
        out[explain] = [(b.raw_scores, a.raw_scores) for b, a in zip(batched, alone)]
    return out


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_attnlrp_span_is_the_per_token_sum_and_batching_changes_nothing(family, patched_child):
    out = patched_child.apply(child_attnlrp_span_and_contrastive, (family,))
    span, summed = out["sum"]
    assert close(span, summed)
    for explain in ("span", "contrastive"):
        for b, a in out[explain]:
            assert torch.allclose(
                torch.from_numpy(b), torch.from_numpy(a), rtol=1e-4, atol=1e-6 * float(np.abs(a).max())
            )


def test_explain_variants_differ_in_what_the_input_holds(tiny_llama):
    nxt = compute_relevance(tiny_llama, [NOTE], ["heart rate"], method="grad_input", explain="next")[0]
    mx = compute_relevance(tiny_llama, [NOTE], ["heart rate"], method="grad_input", explain="max")[0]
    tgt = compute_relevance(tiny_llama, [NOTE], ["heart rate"], method="grad_input", explain="target")[0]
    assert nxt.target_token == mx.target_token == tgt.target_token
    assert not np.allclose(nxt.raw_scores, mx.raw_scores)
    assert not np.allclose(mx.raw_scores, tgt.raw_scores)


def test_max_gives_every_short_task_the_same_map_target_does_not(tiny_llama):
    """For a 1- or 2-token s_T the input holds none of s_T ("max", "target"): the top logit is the
    same whatever the task, the middle token's own logit is not."""
    short = ["heart rate", "Chest"]  # 2 and 1 tokens with this tokenizer, different middle tokens
    encoded = [encode_pair(tiny_llama.tokenizer, NOTE, t, whole_task=True) for t in short]
    assert [len(e.task_ids) for e in encoded] == [2, 1] and encoded[0].target_id != encoded[1].target_id
    mx = compute_relevance(tiny_llama, [NOTE] * 2, short, method="grad_input", explain="max")
    tgt = compute_relevance(tiny_llama, [NOTE] * 2, short, method="grad_input", explain="target")
    np.testing.assert_allclose(mx[0].raw_scores, mx[1].raw_scores, rtol=1e-5)
    assert not np.allclose(tgt[0].raw_scores, tgt[1].raw_scores, rtol=1e-2)


# ---- "span" and "contrastive" ----


def reference_target_relevance(loaded, prefix: list[int], token: int) -> np.ndarray:
    """Plain gradient x input of ONE token's logit after `prefix`, written out by hand."""
    model = loaded.model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    embeds = model.get_input_embeddings()(torch.tensor([prefix])).detach().requires_grad_(True)
    model(inputs_embeds=embeds, use_cache=False).logits[0, -1, token].backward()
    return (embeds.detach() * embeds.grad).sum(-1)[0].numpy()


def per_token_targets(loaded, note, task) -> tuple[list[np.ndarray], int]:
    """The "target" relevance of each token of s_T, each teacher-forced up to just before it,
    on the note tokens; and the index of s_T's middle token."""
    enc = encode_pair(
        loaded.tokenizer, note, task, whole_task=True, chat_template_kwargs=loaded.family.chat_template_kwargs
    )
    full = enc.input_ids + enc.task_ids[-1:]
    first = len(full) - len(enc.task_ids)
    maps = [
        reference_target_relevance(loaded, full[: first + j], full[first + j])[enc.note_index]
        for j in range(len(enc.task_ids))
    ]
    return maps, (len(enc.task_ids) - 1) // 2


def close(a, b):
    scale = float(np.abs(b).max())
    return torch.allclose(
        torch.from_numpy(np.asarray(a, np.float32)),
        torch.from_numpy(np.asarray(b, np.float32)),
        rtol=1e-4,
        atol=1e-5 * scale,
    )  # fp32 rounding


@pytest.mark.parametrize("task", ["presence of pacemaker", "body temperature"])
def test_span_is_the_sum_of_every_task_tokens_target_relevance(tiny, task):
    maps, middle = per_token_targets(tiny, NOTE, task)
    assert len(maps) >= 3
    target = compute_relevance(tiny, [NOTE], [task], method="grad_input", explain="target")[0]
    assert close(target.raw_scores, maps[middle])  # the hand-written reference is the library's "target"
    span = compute_relevance(tiny, [NOTE], [task], method="grad_input", explain="span")[0]
    assert close(span.raw_scores, np.sum(maps, axis=0))
    assert not close(span.raw_scores, maps[middle])
    enc = encode_pair(
        tiny.tokenizer, NOTE, task, whole_task=True, chat_template_kwargs=tiny.family.chat_template_kwargs
    )
    assert span.target_token == tiny.tokenizer.decode(enc.task_ids)


def test_span_of_a_one_token_task_is_its_target(tiny_llama):
    span = compute_relevance(tiny_llama, [NOTE], ["heart"], method="grad_input", explain="span")[0]
    target = compute_relevance(tiny_llama, [NOTE], ["heart"], method="grad_input", explain="target")[0]
    assert close(span.raw_scores, target.raw_scores)


@pytest.mark.parametrize("method", ["grad_input", "attention"])
def test_contrastive_is_the_per_token_span_of_the_task_minus_that_of_the_neutral_text(tiny_llama, method):
    tokenizer = tiny_llama.tokenizer
    for neutral, settings in [("the patient", {}), ("blood pressure", {"neutral": "blood pressure"})]:
        got = compute_relevance(
            tiny_llama,
            [NOTE],
            ["presence of pacemaker"],
            method=method,
            explain="contrastive",
            normalise="clip",
            **settings,
        )[0]
        task_span, neutral_span = (
            compute_relevance(tiny_llama, [NOTE], [t], method=method, explain="span")[0]
            for t in ("presence of pacemaker", neutral)
        )
        n_task, n_neutral = (
            len(encode_pair(tokenizer, NOTE, t, whole_task=True).task_ids) for t in ("presence of pacemaker", neutral)
        )
        expected = task_span.raw_scores / n_task - neutral_span.raw_scores / n_neutral
        np.testing.assert_array_equal(got.offsets, task_span.offsets)
        assert close(got.raw_scores, expected)
        assert (got.raw_scores < 0).any()  # a true difference, clipped by the normalisation
        np.testing.assert_allclose(got.scores, normalise_scores(expected, "clip"), atol=1e-5)


CONTRASTIVE_NOTES = NOTES + [NOTE]  # one note twice: its neutral prompt is shared
CONTRASTIVE_TASKS = TASKS + ["tachycardic"]


@pytest.mark.parametrize("explain", ["span", "contrastive"])
@pytest.mark.parametrize("method", ["grad_input", "attention"])
def test_span_and_contrastive_batched_equal_one_by_one(tiny, method, explain):
    batched = compute_relevance(
        tiny, CONTRASTIVE_NOTES, CONTRASTIVE_TASKS, method=method, explain=explain, batch_size=4
    )
    for note, task, b in zip(CONTRASTIVE_NOTES, CONTRASTIVE_TASKS, batched):
        alone = compute_relevance(tiny, [note], [task], method=method, explain=explain, batch_size=1)[0]
        np.testing.assert_array_equal(b.offsets, alone.offsets)
        assert close(b.raw_scores, alone.raw_scores)
        assert (b.target_token, b.predicted_token) == (alone.target_token, alone.predicted_token)


def test_contrastive_computes_one_neutral_prompt_per_note(tiny_llama):
    calls = []
    compute_relevance(
        tiny_llama,
        [NOTE, NOTE, NOTES[1]],
        TASKS[:3],
        method="attention",
        explain="contrastive",
        batch_size=2,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls[-1] == (5, 5)  # 3 pairs + 2 distinct notes
    calls.clear()
    compute_relevance(
        tiny_llama,
        [NOTE, NOTE],
        TASKS[:2],
        method="attention",
        explain="span",
        batch_size=2,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(2, 2)]


def test_a_config_and_keywords_are_exclusive_and_its_dtype_must_match(tiny_llama):
    from ml.relevance import RelevanceConfig

    with pytest.raises(TypeError, match="not both"):
        compute_relevance(tiny_llama, [NOTE], ["heart rate"], RelevanceConfig(), method="attention")
    with pytest.raises(ValueError, match="asks for bfloat16, but the model is loaded in torch.float32"):
        compute_relevance(tiny_llama, [NOTE], ["heart rate"], RelevanceConfig(method="attention", dtype="bfloat16"))
    with pytest.raises(ValueError, match="unknown explain"):
        compute_relevance(tiny_llama, [NOTE], ["heart rate"], explain="everything")
    r = compute_relevance(tiny_llama, [NOTE], ["heart rate"], RelevanceConfig(method="attention", dtype="float32"))[0]
    assert r.offsets[-1, 1] == len(NOTE)


def test_clip_normalisation_drops_negative_relevance():
    raw = np.array([-4.0, 1.0, 2.0, 0.0], dtype=np.float32)
    np.testing.assert_allclose(normalise_scores(raw, "abs"), [1.0, 0.25, 0.5, 0.0])
    np.testing.assert_allclose(normalise_scores(raw, "clip"), [0.0, 0.5, 1.0, 0.0])
    assert normalise_scores(np.zeros(3, np.float32)).tolist() == [0.0, 0.0, 0.0]


def test_relevance_leaves_the_model_as_it_found_it(tiny_llama):
    model = tiny_llama.model
    model.train()
    next(model.parameters()).requires_grad_(True)
    compute_relevance(tiny_llama, [NOTE], ["heart rate"], method="attention")
    assert model.training
    assert model.config._attn_implementation == "sdpa"
    assert next(model.parameters()).requires_grad


def test_progress_is_reported_per_batch(tiny_llama):
    calls = []
    compute_relevance(
        tiny_llama,
        NOTES,
        TASKS,
        method="attention",
        batch_size=3,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(3, 4), (4, 4)]


def test_italian_spanish_and_custom_templates_run(tiny_llama):
    for template in ("it", "es", "Clinical note:\n{note}\nFinding: {task}"):
        r = compute_relevance(tiny_llama, [NOTE], ["heart rate"], method="attention", template=template)[0]
        assert r.offsets[-1, 1] == len(NOTE)


# ---- the relevance command ----


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def tiny_model_folder(tmp_path):
    loaded = build_loaded("llama")
    folder = tmp_path / "tiny-llama"
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return folder


def test_relevance_command_writes_one_line_per_pair_and_resumes(tmp_path, tiny_model_folder, capsys):
    from ml.__main__ import main

    notes = tmp_path / "notes.jsonl"
    write_jsonl(
        notes,
        [
            {"id": "a", "text": NOTE},
            {"id": "b", "text": NOTES[1], "tasks": ["chest finding"]},
            {"id": "c", "text": "  "},
        ],
    )
    out = tmp_path / "rel.jsonl"
    args = [
        "relevance",
        "--notes",
        str(notes),
        "--model",
        str(tiny_model_folder),
        "--task",
        "heart rate",
        "--task",
        "presence of pacemaker",
        "--method",
        "attention",
        "--dtype",
        "float32",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["note_id"], r["task"]) for r in rows] == [
        ("a", "heart rate"),
        ("a", "presence of pacemaker"),
        ("b", "chest finding"),
    ]
    row = rows[0]
    assert set(row) >= {
        "note_id",
        "task",
        "model",
        "method",
        "template",
        "target_token",
        "offsets",
        "scores",
        "raw_scores",
    }
    assert row["model"] == "tiny-llama" and row["method"] == "attention" and row["template"] == "en"
    assert len(row["offsets"]) == len(row["scores"]) == len(row["raw_scores"])
    assert "".join(NOTE[s:e] for s, e in row["offsets"]) == NOTE

    out.write_text(out.read_text().splitlines(keepends=True)[0] + '{"note_id": "a", "ta')  # interrupted run
    assert main(args) == 0
    rows = [
        json.loads(line)
        for line in out.read_text().splitlines()
        if line.startswith('{"note_id": "a", "task"') or '"b"' in line
    ]
    assert sorted((r["note_id"], r["task"]) for r in rows) == [
        ("a", "heart rate"),
        ("a", "presence of pacemaker"),
        ("b", "chest finding"),
    ]
    assert main(args) == 0
    assert "nothing to do" in capsys.readouterr().err


def test_the_command_records_its_configuration_and_resumes_per_configuration(tmp_path, tiny_model_folder):
    from ml.__main__ import main
    from ml.relevance import RelevanceConfig

    notes = tmp_path / "notes.jsonl"
    write_jsonl(notes, [{"id": "a", "text": NOTE}, {"id": "b", "text": NOTES[1]}])
    out = tmp_path / "rel.jsonl"
    common = [
        "relevance",
        "--notes",
        str(notes),
        "--model",
        str(tiny_model_folder),
        "--task",
        "heart rate",
        "--method",
        "attention",
        "--dtype",
        "float32",
        "--out",
        str(out),
    ]
    assert main(common) == 0
    assert main(common + ["--explain", "contrastive", "--neutral", "the person", "--normalise", "clip"]) == 0
    assert main(common + ["--explain", "span"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["note_id"], r["explain"]) for r in rows] == [
        ("a", "next"),
        ("b", "next"),
        ("a", "contrastive"),
        ("b", "contrastive"),
        ("a", "span"),
        ("b", "span"),
    ]
    contrastive = RelevanceConfig(
        method="attention", explain="contrastive", neutral="the person", normalise="clip", dtype="float32"
    )
    assert rows[2]["config"] == contrastive.to_dict() and rows[2]["config_key"] == contrastive.key
    assert rows[0]["config_key"] == RelevanceConfig(method="attention", dtype="float32").key
    assert len({r["config_key"] for r in rows}) == 3
    assert rows[4]["target_token"] == "heart rate"
    lines = out.read_text()
    assert main(common + ["--explain", "span"]) == 0 and out.read_text() == lines  # nothing left to do


def test_the_command_refuses_a_neutral_text_without_contrastive(tmp_path):
    from ml.__main__ import main

    notes = tmp_path / "notes.jsonl"
    write_jsonl(notes, [{"id": "a", "text": NOTE}])
    with pytest.raises(SystemExit, match="--neutral: a neutral description applies only to explain='contrastive'"):
        main(
            [
                "relevance",
                "--notes",
                str(notes),
                "--task",
                "x",
                "--neutral",
                "the patient",
                "--out",
                str(tmp_path / "o"),
            ]
        )


def test_the_command_samples_the_same_tasks_per_note_as_the_library():
    from types import SimpleNamespace

    from ml.commands.relevance import plan
    from ml.masking import sample_tasks

    tasks = [f"task {i}" for i in range(20)]
    notes = [{"id": f"note-{i}", "text": "x", "tasks": None} for i in range(3)]
    args = SimpleNamespace(sample=9, seed=7, method="attnlrp")
    pairs = plan(notes, tasks, args, done=set())
    for note in notes:
        chosen = [task for n, task in pairs if n["id"] == note["id"]]
        assert chosen == sample_tasks(note["id"], tasks, k=9, seed=7)
    assert len({tuple(t for n, t in pairs if n["id"] == note["id"]) for note in notes}) == 3


def test_relevance_command_rejects_a_bad_template(tmp_path):
    from ml.__main__ import main

    notes = tmp_path / "notes.jsonl"
    write_jsonl(notes, [{"id": "a", "text": NOTE}])
    with pytest.raises(SystemExit, match="--template"):
        main(
            [
                "relevance",
                "--notes",
                str(notes),
                "--task",
                "x",
                "--template",
                "no placeholders",
                "--out",
                str(tmp_path / "o"),
            ]
        )


# ---- the real SmolLM2 model (slow) ----

EVIDENCE_NOTE = (
    "The patient is a 72-year-old woman who lives with her daughter. She reports no known drug allergies. "
    "Her past surgical history includes a cholecystectomy in 2005. "
    "On arrival her heart rate was 130 bpm and she was tachycardic. "
    "She was given a sandwich and a cup of tea in the waiting room. Her son will visit tomorrow afternoon."
)
EVIDENCE = "On arrival her heart rate was 130 bpm and she was tachycardic."


def mass_ratio(result, start, end):
    """Relevance mass on the tokens inside [start, end) divided by their share of tokens."""
    inside = (result.offsets[:, 0] >= start) & (result.offsets[:, 1] <= end)
    return float(result.scores[inside].sum() / result.scores.sum() / inside.mean())


PACEMAKER_NOTE = (
    "Past medical history: type 2 diabetes mellitus on metformin. The patient has a permanent "
    "pacemaker implanted in 2018 for complete heart block. He is a retired teacher and enjoys gardening. "
    "Today he came in for a routine dental referral letter."
)
PACEMAKER = "permanent pacemaker implanted in 2018"
REAL_PAIRS = [(EVIDENCE_NOTE, "heart rate"), (EVIDENCE_NOTE, "tachycardia"), (PACEMAKER_NOTE, "pacemaker")]


def child_real_relevance(model_dir, pairs, method):
    from ml.models import DEFAULT_MODEL, load_model, preferred_dtype
    from ml.relevance import compute_relevance

    loaded = load_model(DEFAULT_MODEL, model_dir=model_dir, dtype=preferred_dtype("cpu"))
    return compute_relevance(loaded, [n for n, _ in pairs], [t for _, t in pairs], method=method)


@pytest.fixture(scope="module")
def real_attnlrp(smollm2_dir, patched_child):
    """AttnLRP on the real model for REAL_PAIRS, computed once in the patched child."""
    return patched_child.apply(child_real_relevance, (smollm2_dir, REAL_PAIRS, "attnlrp"))


@pytest.mark.slow
def test_attnlrp_finds_the_heart_rate_evidence(real_attnlrp):
    start = EVIDENCE_NOTE.index(EVIDENCE)
    for r in real_attnlrp[:2]:
        assert r.target_token in ("heart", "t")
        assert mass_ratio(r, start, start + len(EVIDENCE)) > 1.5
    top = real_attnlrp[0].offsets[np.argmax(real_attnlrp[0].scores)]
    assert start <= top[0] < start + len(EVIDENCE)


@pytest.mark.slow
def test_attnlrp_localises_a_gold_span_better_than_uniform_and_attention(real_attnlrp, smollm2):
    start = PACEMAKER_NOTE.index(PACEMAKER)
    lrp = real_attnlrp[2]
    attention = compute_relevance(smollm2, [PACEMAKER_NOTE], ["pacemaker"], method="attention")[0]
    assert mass_ratio(lrp, start, start + len(PACEMAKER)) > 1.5
    assert mass_ratio(lrp, start, start + len(PACEMAKER)) > mass_ratio(attention, start, start + len(PACEMAKER))


@pytest.mark.slow
def test_real_model_offsets_and_batching(smollm2):
    notes = [EVIDENCE_NOTE, "Heart rate 58 bpm, bradycardic.", "Sinus rhythm, HR 72, no murmurs."]
    tasks = ["heart rate"] * 3
    batched = compute_relevance(smollm2, notes, tasks, method="attention", batch_size=3)
    for note, task, b in zip(notes, tasks, batched):
        alone = compute_relevance(smollm2, [note], [task], method="attention", batch_size=1)[0]
        assert "".join(note[s:e] for s, e in b.offsets) == note
        assert b.target_token == "heart"
        assert np.corrcoef(b.raw_scores, alone.raw_scores)[0, 1] > 0.999


def test_notes_longer_than_the_context_are_cut_to_fit(tiny_llama):
    from ml.relevance import TEMPLATE_ROOM

    limit = tiny_llama.model.config.max_position_embeddings - TEMPLATE_ROOM
    long_note = " ".join([NOTES[1]] * 200)
    r = compute_relevance(tiny_llama, [long_note], ["heart rate"], method="attention")[0]
    assert r.truncated and len(r.offsets) <= limit + 1 and r.offsets[0, 0] == 0
