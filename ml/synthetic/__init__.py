"""Synthetic emergency-department notes (Italian and English) with gold labels and evidence.

A seeded generator for demos and volume tests: triage vitals, history, home therapy, the event
(syncope, fall, trauma, seizure, chest pain, dyspnea), examination, work-up, ED course and
disposition, written tersely with the abbreviations of real ED notes and occasional typos.

How labels are made: the generator first plans a label for each gold task, then writes text
that states it. Every phrase that justifies a label is written as an *evidence part* carrying
its (task, label) pairs; the note's annotations are collected from the evidence parts that were
actually written, so a label exists only where its words are in the note. A task with no
evidence part is "unknown" with no evidence. Numeric classes are sampled away from the class
borders (e.g. heart rate 35-55 / 62-98 / 105-160 for bradycardic / normocardic / tachycardic).
Conventions: a negative ("n", "certainly not chronic") needs an explicit negation in the text
("denies EtOH", "non portatore di PMK", "no home meds"); a medication list that simply lacks a
drug class leaves that task "unknown". Evidence spans are half-open [start, end) character
offsets into the final text and are checked against the written phrase while generating.
Typos are only injected into plain (non-evidence) text, using their own random stream, so the
labels and evidence phrases of note i do not depend on `typo_rate`.

Gold tasks (GOLD_TASKS, catalog slugs; every note gets one annotation per task): heart rate,
blood pressure, SpO2, body temperature, respiratory rate, level of consciousness (AVPU),
anticoagulant/antiplatelet, antiepileptic and antihypertensive therapy, chronic cardiac and renal
failure, chronic dialysis, pacemaker, known epilepsy, alcohol abuse, allergy, living alone,
mobility, head or other trauma, concussive head trauma, duration of unconsciousness, prodromes,
TLOC during effort, tonic-clonic seizure, tongue bite, chest pain, dyspnea, ECG / brain CT /
chest X-ray abnormality, and ten laboratory values measured or not (haemoglobin, leukocytes,
platelets, creatinine, glucose, INR, CRP, troponin, D-dimer, blood alcohol).

Length: notes have min_words..max_words words (skewed towards short ones); the clinical core is
never cut, so a max_words below about 160 is not always honoured.

Determinism: note i depends only on (seed, i) and the keyword arguments, so a corpus can be
generated in pieces (`start`) or in parallel processes and concatenated. Speed: about 7,000
notes/s of CPU time on one core (about 5,500/s including writing the JSONL files).
"""

from __future__ import annotations

from ml.synthetic.generator import generate_notes, make_note, write_corpus
from ml.synthetic.tasks import GOLD_TASKS, LANGUAGES, UNKNOWN, GoldAnnotation, SyntheticNote

__all__ = [
    "GOLD_TASKS",
    "LANGUAGES",
    "UNKNOWN",
    "GoldAnnotation",
    "SyntheticNote",
    "generate_notes",
    "make_note",
    "write_corpus",
]
