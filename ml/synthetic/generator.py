"""Writing notes: the plan of labels per note, the sections that state them, typos, and the JSONL files."""

from __future__ import annotations

import bisect
import itertools
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

from ml.synthetic.lexicon import COPRIME_STEPS, COURSE, LEXICON
from ml.synthetic.tasks import (
    ACAP,
    AED,
    AHT,
    ALC,
    ALLERGY,
    ALLOWED_LABELS,
    ALONE,
    AVPU,
    BP,
    CHEST_PAIN,
    CHF,
    CKD,
    CONCUSSIVE,
    CT_HEAD,
    CXR,
    DESCRIPTIONS,
    DIAL,
    DURATION,
    DYSPNEA,
    ECG,
    EFFORT,
    EPI,
    EVENT_WEIGHTS,
    EVENTS,
    GOLD_TASKS,
    HR,
    LABELS_USED,
    LABS,
    LANGUAGES,
    MOBILITY,
    PMK,
    PRODROME,
    RR,
    SPO2,
    TEMP,
    TONGUE,
    TONIC_CLONIC,
    TRAUMA,
    UNKNOWN,
    GoldAnnotation,
    SyntheticNote,
)


def generate_notes(
    n: int,
    *,
    seed: int = 0,
    language: str = "en",
    start: int = 0,
    typo_rate: float = 0.02,
    min_words: int = 80,
    max_words: int = 600,
) -> Iterator[SyntheticNote]:
    """Notes start .. start+n-1, one at a time; note i depends only on (seed, i) and the options."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
    if n < 0 or start < 0 or seed < 0:
        raise ValueError("n, start and seed must be non-negative")
    if not 0.0 <= typo_rate <= 0.5:
        raise ValueError("typo_rate must be between 0 and 0.5")
    if not 1 <= min_words <= max_words:
        raise ValueError("need 1 <= min_words <= max_words")
    for i in range(start, start + n):
        yield make_note(i, seed=seed, language=language, typo_rate=typo_rate, min_words=min_words, max_words=max_words)


def make_note(
    i: int, *, seed: int = 0, language: str = "en", typo_rate: float = 0.02, min_words: int = 80, max_words: int = 600
) -> SyntheticNote:
    """Note number i of the corpus for `seed` (see generate_notes)."""
    key = (seed << 64) | i
    rng = random.Random(key << 1)
    lang_draw, sex_draw = rng.random(), rng.random()
    lang = language if language != "mixed" else ("it" if lang_draw < 0.5 else "en")
    sex = "F" if sex_draw < 0.5 else "M"
    # Skewed towards short notes; the last course entry and its header may add a few words, hence the margin.
    top = max(min_words, max_words - 15)
    target = min_words + int((top - min_words) * rng.random() ** 2)
    writer = _Writer(rng, lang, sex, target)
    parts = writer.write()
    segments = _merge_plain(parts)
    if typo_rate > 0:
        _add_typos(segments, random.Random((key << 1) | 1), typo_rate)
    text, annotations = _assemble(segments)
    words = len(text.split())
    metadata = {
        "language": lang,
        "event": writer.event,
        "age": writer.age,
        "sex": sex,
        "words": words,
        "synthetic": True,
        "seed": seed,
        "index": i,
    }
    return SyntheticNote(f"syn-{seed}-{i:07d}", text, lang, metadata, annotations)


def _merge_plain(parts: list) -> list:
    """The same parts with each run of plain strings joined into one string."""
    out = []
    run = []
    for part in parts:
        if type(part) is str:
            run.append(part)
        else:
            if run:
                out.append("".join(run))
                run = []
            out.append(part)
    if run:
        out.append("".join(run))
    return out


def _assemble(parts: list) -> tuple[str, list[GoldAnnotation]]:
    """Join the parts; evidence parts (text, ((task, label), ...)) become annotations."""
    pieces = []
    spans: dict[str, list[tuple[int, int]]] = {}
    labels: dict[str, str] = {}
    checks = []
    pos = 0
    for part in parts:
        if type(part) is str:
            pieces.append(part)
            pos += len(part)
            continue
        phrase, pairs = part
        end = pos + len(phrase)
        for task, label in pairs:
            if (task, label) not in ALLOWED_LABELS:
                raise AssertionError(f"label {label!r} is not an option of the catalog task {task!r}")
            if labels.setdefault(task, label) != label:
                raise AssertionError(f"note states two labels for {task}: {labels[task]!r} and {label!r}")
            spans.setdefault(task, []).append((pos, end))
        checks.append((pos, end, phrase))
        pieces.append(phrase)
        pos = end
    text = "".join(pieces).rstrip()  # trailing newlines only: no evidence phrase ends in whitespace
    for start, end, phrase in checks:
        if text[start:end] != phrase:
            raise AssertionError(f"evidence [{start}, {end}) does not hold the written phrase {phrase!r}")
    annotations = [
        GoldAnnotation(task, DESCRIPTIONS[task], labels.get(task, UNKNOWN), spans.get(task, [])) for task in GOLD_TASKS
    ]
    return text, annotations


_NEIGHBOURS = dict(
    zip(
        "abcdefghijklmnopqrstuvwxyz",
        [
            "sq",
            "vn",
            "xv",
            "sf",
            "wr",
            "dg",
            "fh",
            "gj",
            "uo",
            "hk",
            "jl",
            "ko",
            "nk",
            "bm",
            "ip",
            "ol",
            "wa",
            "et",
            "ad",
            "ry",
            "yi",
            "cb",
            "qe",
            "zc",
            "tu",
            "xs",
        ],
    )
)


_TYPO_WORD = re.compile(r"\b[^\W\d_]{4,}\b")  # a word of 4+ letters: numbers, units and short words stay as written


def _add_typos(parts: list, rng: random.Random, rate: float) -> None:
    """Put about rate x (plain words) typos into plain parts, never into evidence parts."""
    plain = [k for k, p in enumerate(parts) if type(p) is str]
    cumulative = list(itertools.accumulate(len(parts[k]) for k in plain))
    if not cumulative or not cumulative[-1]:
        return
    expected = rate * cumulative[-1] / 5.8  # about 5.8 characters per word, space included (measured)
    count = int(expected) + (rng.random() < expected - int(expected))
    r = rng.random
    for _ in range(count):
        at = int(r() * cumulative[-1])
        n = bisect.bisect_right(cumulative, at)  # a plain part, weighted by its length
        k = plain[n]
        part = parts[k]
        match = _TYPO_WORD.search(part, at - (cumulative[n - 1] if n else 0))
        if match is None:
            continue
        start, end = match.span()
        word = match.group()
        j = 1 + int(r() * (len(word) - 2))
        op = r()
        if op < 0.35:  # swap two neighbours
            word = word[:j] + word[j + 1] + word[j] + word[j + 2 :]
        elif op < 0.6:  # drop a letter
            word = word[:j] + word[j + 1 :]
        elif op < 0.8:  # double a letter
            word = word[:j] + word[j] + word[j:]
        else:  # hit a neighbouring key
            near = _NEIGHBOURS.get(word[j].lower())
            if near:
                word = word[:j] + near[r() < 0.5] + word[j + 1 :]
        parts[k] = part[:start] + word + part[end:]
        cumulative_shift = len(word) - (end - start)
        if cumulative_shift:
            for m in range(n, len(cumulative)):
                cumulative[m] += cumulative_shift


def _pick(r, weights: tuple[float, ...]) -> int:
    """Index drawn with the given weights (they need not sum to 1)."""
    x = r() * sum(weights)
    for k, w in enumerate(weights):
        x -= w
        if x < 0:
            return k
    return len(weights) - 1


class _Writer:
    """Plans the labels of one note and writes its parts: str (plain) or (phrase, ((task, label), ...))."""

    def __init__(self, rng: random.Random, lang: str, sex: str, target_words: int):
        r = self.r = rng.random
        # Faster than rng.choice / rng.randint (which go through Python-level _randbelow).
        self.ch = lambda seq: seq[int(r() * len(seq))]
        self.randint = lambda a, b: a + int(r() * (b - a + 1))
        self.shuffle = rng.shuffle
        self.lang = lang
        self.it = lang == "it"
        self.sex = sex
        self.L = LEXICON[(lang, sex)]
        self.target = target_words
        self.event = EVENTS[_pick(self.r, EVENT_WEIGHTS)]
        self.age = self.randint(18, 60) if self.event == "trauma" else int(18 + 80 * self.r() ** 0.6)

    def ev(self, pool: str, *pairs, **fields):
        phrase = self.ch(self.L[pool])
        if fields:
            phrase = phrase.format(**fields)
        return phrase, pairs

    def txt(self, pool: str, **fields) -> str:
        phrase = self.ch(self.L[pool])
        return phrase.format(**fields) if fields else phrase

    # -- the note ------------------------------------------------------------------------
    def write(self) -> list:
        r = self.r
        self.hr_class = None
        # Called in this order on purpose: later sections read what earlier ones planned
        # (exam: the consciousness phrase; meds: epilepsy; workup: heart rate, head trauma, alcohol).
        sections = {
            "reason": self.reason(),
            "triage": self.triage(),
            "hpi": self.hpi(),
            "pmh": self.pmh(),
            "meds": self.meds(),
            "exam": self.exam(),
            "workup": self.workup(),
        }
        order = ["reason", "triage", "hpi", "pmh", "meds", "exam", "workup"]
        if r() < 0.3:
            order[0], order[1] = order[1], order[0]
        if r() < 0.2:
            order[1], order[2] = order[2], order[1]
        if r() < 0.3:
            order[3], order[4] = order[4], order[3]
        if r() < 0.25:
            order[5], order[6] = order[6], order[5]
        style = _pick(r, (0.45, 0.3, 0.25))  # inline headers, headers on their own line, no headers
        upper = r() < 0.25
        headers = self.L["headers"]
        parts: list = []
        for name in order:
            if sections[name]:
                self._section(parts, headers[name], sections[name], style, upper)
        dispo: list = []
        pool = self.L["dispo_critical"] if self.avpu_label == "P" else self.L["dispo"][self.event]
        self._section(dispo, headers["dispo"], [self.ch(pool)], style, upper)
        words = len("".join(p if type(p) is str else p[0] for p in parts + dispo).split())
        if words < self.target:  # the ED course fills the note up to its target length
            self._section(parts, headers["course"], self.course(self.target - words), style, upper)
        return parts + dispo

    def _section(self, parts: list, names: list[str], body: list, style: int, upper: bool) -> None:
        if style == 2:
            parts.extend(body)
            parts.append("\n")
            return
        name = self.ch(names)
        if upper:
            name = name.upper()
        parts.append(name + (":\n" if style == 1 else ": "))
        parts.extend(body)
        parts.append("\n\n" if style == 1 else "\n")

    # -- sections ------------------------------------------------------------------------
    def reason(self) -> list:
        e, L = self.event, self.L
        if e == "chest_pain":
            return [self.ev("cc_cp", (CHEST_PAIN, "y"))]
        if e == "dyspnea":
            return [self.ev("cc_dys", (DYSPNEA, "y"))]
        if e == "trauma" and self.r() < 0.4:
            return [self.ev("cc_trauma_ev", (TRAUMA, "y"))]
        return [self.ch(L["cc"][e])]

    def triage(self) -> list:
        r, it, e = self.r, self.it, self.event
        items = []
        if r() < 0.85:
            weights = {
                "syncope": (25, 55, 20),
                "seizure": (5, 55, 40),
                "chest_pain": (10, 60, 30),
                "dyspnea": (5, 45, 50),
            }.get(e, (8, 62, 30))
            k = _pick(r, weights)
            self.hr_class = k
            v = self.randint(*((35, 55), (62, 98), (105, 160))[k])
            items.append(self.ev("hr", (HR, LABELS_USED[HR][k]), v=v))
        if r() < 0.85:
            k = _pick(r, {"syncope": (25, 50, 25), "trauma": (15, 60, 25)}.get(e, (8, 52, 40)))
            (s_lo, s_hi), (d_lo, d_hi) = (((65, 88), (35, 55)), ((105, 135), (60, 85)), ((150, 210), (85, 115)))[k]
            s, d = self.randint(s_lo, s_hi), self.randint(d_lo, d_hi)
            items.append(self.ev("bp", (BP, LABELS_USED[BP][k]), s=s, d=d))
        if r() < (0.97 if e == "dyspnea" else 0.8):
            v = self.randint(82, 96) if e == "dyspnea" else self.randint(93, 100)
            items.append(self.ev("spo2", (SPO2, "measured"), v=v, l=self.randint(1, 4)))
        if r() < (0.8 if e == "dyspnea" else 0.55):
            k = _pick(r, (5, 60, 35) if e == "dyspnea" else (5, 80, 15))
            low, width = ((33.0, 2.0), (36.0, 1.3), (38.0, 2.5))[k]
            c = low + width * r()
            if not it and self.L["temp_f"] and r() < 0.3:
                phrase = self.ch(self.L["temp_f"]).format(t=f"{c * 9 / 5 + 32:.1f}")
            else:
                t = f"{c:.1f}"
                phrase = self.ch(self.L["temp_c"]).format(t=t.replace(".", ",") if it and r() < 0.5 else t)
            items.append((phrase, ((TEMP, LABELS_USED[TEMP][k]),)))
        if r() < (0.85 if e == "dyspnea" else 0.35):
            k = _pick(r, (3, 37, 60) if e == "dyspnea" else (5, 70, 25))
            v = self.randint(*((6, 9), (12, 20), (24, 36))[k])
            items.append(self.ev("rr", (RR, LABELS_USED[RR][k]), v=v))
        self.avpu = self.avpu_label = None  # a consciousness phrase left for the exam section
        if r() < 0.75:
            k = _pick(r, {"seizure": (60, 30, 10), "trauma": (75, 15, 10)}.get(e, (88, 9, 3)))
            self.avpu_label = "AVP"[k]
            phrase = self.ev("avpu_" + self.avpu_label, (AVPU, self.avpu_label))
            if r() < 0.5:
                self.avpu = phrase
            else:
                items.append(phrase)
        self.shuffle(items)
        code = self.txt("triage_code")
        out = [code + " "] if code else []
        _join(items, self.ch((", ", ", ", " - ", "; ", "\n")), out)
        return out

    def hpi(self) -> list:
        r, e = self.r, self.event
        intro = self.txt("intro", age=self.age, sex=self.sex)
        arrival = self.txt("arrival")
        head = intro + (", " + arrival if arrival else "") + ", "
        lead = self.txt("lead_" + e) if e != "syncope" else ""
        out = [head + lead]
        clauses = []
        self.head_trauma = False
        if e == "syncope":
            out.append(self.txt("syncope_event"))
            k = _pick(r, (15, 35, 50))
            if k < 2:
                clauses.append(self.ev(("effort_y", "effort_n")[k], (EFFORT, "yn"[k])))
            k = _pick(r, (40, 30, 30))
            if k < 2:
                clauses.append(self.ev(("prodrome_y", "prodrome_n")[k], (PRODROME, "yn"[k])))
            k = _pick(r, (45, 15, 40))
            if k < 2:
                clauses.append(
                    self.ev(
                        ("dur_short", "dur_long")[k],
                        (DURATION, ("short", "long")[k]),
                        s=self.randint(5, 40),
                        m=self.randint(5, 20),
                    )
                )
            k = _pick(r, (25, 25, 50))
            self.head_trauma = k == 0
            if k == 0:
                clauses.append(self.ev("tr_head", (TRAUMA, "y")))
            elif k == 1:
                clauses.append(self.ev("tr_none", (TRAUMA, "n")))
        elif e in ("fall", "trauma"):
            out.append(self.txt(e + "_event"))
            k = _pick(r, (15, 25, 30, 30, 0 if e == "trauma" else 25))
            self.head_trauma = k < 3
            pool, pairs = [
                ("tr_head_conc", ((TRAUMA, "y"), (CONCUSSIVE, "y"))),
                ("tr_head_noconc", ((TRAUMA, "y"), (CONCUSSIVE, "n"))),
                ("tr_head", ((TRAUMA, "y"),)),
                ("tr_other", ((TRAUMA, "y"),)),
                ("tr_none", ((TRAUMA, "n"),)),
            ][k]
            clauses.append((self.ch(self.L[pool]), pairs))
            if k < 3 and r() < 0.3:
                clauses.append(self.ev("tr_other", (TRAUMA, "y")))
        elif e == "seizure":
            k = _pick(r, (60, 15, 25))
            out.append(self.ev(("tcs_y", "tcs_n")[k], (TONIC_CLONIC, "yn"[k])) if k < 2 else self.txt("seizure_event"))
            k = _pick(r, (35, 35, 30))
            if k < 2:
                clauses.append(self.ev(("tongue_y", "tongue_n")[k], (TONGUE, "yn"[k])))
            extra = self.txt("seizure_extra")
            if extra:
                clauses.append(extra)
            self.head_trauma = r() < 0.1
            if self.head_trauma:
                clauses.append(self.ev("tr_head", (TRAUMA, "y")))
        elif e == "chest_pain":
            out.append(self.ev("cp_y", (CHEST_PAIN, "y")))
            clauses.append(self.txt("cp_onset", h=self.randint(1, 12)))
            k = _pick(r, (35, 35, 30))
            if k < 2:
                clauses.append(self.ev(("dys_y", "dys_n")[k], (DYSPNEA, "yn"[k])))
        else:  # dyspnea
            out.append(self.ev("dys_y", (DYSPNEA, "y")))
            clauses.append(self.txt("dys_onset", d=self.randint(2, 7)))
            if r() < 0.4:
                clauses.append(self.ev("cp_n", (CHEST_PAIN, "n")))
        negatives = []
        if e not in ("chest_pain", "dyspnea"):
            k = _pick(r, (20, 10, 10, 60))
            if k == 0:
                negatives.append(self.ev("cp_dys_n", (CHEST_PAIN, "n"), (DYSPNEA, "n")))
            elif k == 1:
                negatives.append(self.ev("cp_n", (CHEST_PAIN, "n")))
            elif k == 2:
                negatives.append(self.ev("dys_n", (DYSPNEA, "n")))
        self.shuffle(clauses)
        for clause in clauses:
            out.append(", ")
            out.append(clause)
        for negative in negatives:
            out.append(". ")
            out.append(_cap(negative))
        out.append(".")
        return out

    def pmh(self) -> list:
        r, e = self.r, self.event
        young = self.age < 50
        pool = self.L["pmh_neutral"]
        count = _pick(r, (50, 35, 15) if young else (15, 25, 25, 15, 10, 10))
        items = [
            t.format(yr=self.randint(1995, 2023)) if "{" in t else t
            for t in dict.fromkeys(self.ch(pool) for _ in range(count))
        ]
        k = _pick(r, (35, 4, 6, 55) if e == "dyspnea" else (12, 4, 6, 78))
        if young and k < 2 and r() < 0.8:
            k = 3
        if k < 3:
            pool = ("chf_cert", "chf_poss", "chf_not")[k]
            items.append(self.ev(pool, (CHF, LABELS_USED[CHF][k]), ef=self.randint(20, 40)))
        k = _pick(r, (3, 4, 8, 3, 5, 77))
        if young and k < 4 and r() < 0.8:
            k = 5
        if k < 5:
            pool, pairs = [
                ("ckd_dial", ((CKD, "certainly chronic"), (DIAL, "certainly chronic"))),
                ("ckd_nodial", ((CKD, "certainly chronic"), (DIAL, "certainly not chronic"))),
                ("ckd_cert", ((CKD, "certainly chronic"),)),
                ("ckd_poss", ((CKD, "possibly chronic"),)),
                ("ckd_not", ((CKD, "certainly not chronic"),)),
            ][k]
            items.append((self.ch(self.L[pool]).format(st=self.ch(("3a", "3b", "4"))), pairs))
        k = _pick(r, (15, 4, 81) if e == "syncope" else (8, 4, 88))
        if young and k == 0 and r() < 0.9:
            k = 2
        if k < 2:
            items.append(self.ev(("pmk_y", "pmk_n")[k], (PMK, "yn"[k]), yr=self.randint(2005, 2023)))
        self.epilepsy = _pick(r, (60, 25, 15) if e == "seizure" else (3, 3, 94))
        if self.epilepsy < 2:
            items.append(self.ev(("epi_y", "epi_n")[self.epilepsy], (EPI, "yn"[self.epilepsy])))
        self.shuffle(items)
        # social history and allergies close the section
        social = []
        self.alcohol = _pick(r, (20, 30, 50) if e in ("fall", "trauma") else (10, 30, 60))
        if self.alcohol < 2:
            social.append(self.ev(("alc_y", "alc_n")[self.alcohol], (ALC, "yn"[self.alcohol])))
        if r() < 0.3:
            social.append(self.txt("smoke"))
        mob = _pick(r, (30, 0, 0, 0, 70) if self.age < 60 else (30, 12, 6, 3, 49))
        if mob < 4:
            pool = ("mob_independent", "mob_aids", "mob_assist", "mob_bedridden")[mob]
            social.append(self.ev(pool, (MOBILITY, LABELS_USED[MOBILITY][mob])))
        k = _pick(r, (0 if mob == 3 else 20, 30, 50))
        if k < 2:
            social.append(self.ev(("alone_y", "alone_n_young" if self.age < 40 else "alone_n")[k], (ALONE, "yn"[k])))
        self.shuffle(social)
        k = _pick(r, (20, 45, 35))
        if k < 2:
            social.append(self.ev(("allergy_y", "allergy_n")[k], (ALLERGY, "yn"[k])))
        out = []
        sep = self.ch((", ", "; ", "\n- "))
        if sep == "\n- " and items:
            out.append("- ")
        _join(items, sep, out)
        if social:
            if items:
                out.append(". " if sep != "\n- " else "\n")
            social[0] = _cap(social[0])
            _join(social, ". " if r() < 0.5 else ", ", out)
        if out:
            out.append(".")
        return out

    def meds(self) -> list:
        r = self.r
        acap = _pick(r, (30, 15, 55))
        aed = _pick(r, (85, 10, 5)) if self.epilepsy == 0 else _pick(r, (2, 8, 90))
        aht = 0 if r() < 0.35 else 2
        if acap and aed and aht and r() < 0.2:
            return [self.ev("no_meds", (ACAP, "n"), (AED, "n"), (AHT, "n")), "."]
        pool = self.L["meds_neutral"]
        drugs = [
            t.format(u=self.randint(8, 30), mcg=self.ch((25, 50, 75, 100))) if "{" in t else t
            for t in dict.fromkeys(self.ch(pool) for _ in range(_pick(r, (20, 25, 25, 15, 15))))
        ]
        if acap == 0:
            names = dict.fromkeys(self.ch(self.L["acap_y"]) for _ in range(1 if r() < 0.8 else 2))
            drugs.extend((name, ((ACAP, "y"),)) for name in names)
        if aed == 0:
            drugs.append(self.ev("aed_y", (AED, "y")))
        if aht == 0:
            drugs.append(self.ev("aht_y", (AHT, "y")))
        self.shuffle(drugs)
        out = []
        if drugs:
            intro = self.txt("meds_intro")
            if intro:
                out.append(intro + " ")
            _join(drugs, self.ch((", ", ", ", "; ", " + ")), out)
        negatives = []
        if acap == 1:
            negatives.append(self.ev("acap_n", (ACAP, "n")))
        if aed == 1:
            negatives.append(self.ev("aed_n", (AED, "n")))
        for neg in negatives:
            if out:
                out.append(". ")
            out.append(_cap(neg))
        if out:
            out.append(".")
        return out

    def exam(self) -> list:
        items = [self.txt("exam_neutral") for _ in range(self.randint(0, 2 + self.target // 120))]
        items = list(dict.fromkeys(items))
        if self.avpu is not None:
            items.insert(0, self.avpu)
        out = []
        _join(items, self.ch((". ", ", ", "; ")), out)
        if out:
            out.append(".")
        return out

    def workup(self) -> list:
        r, e = self.r, self.event
        items = []
        if r() < (0.85 if e in ("chest_pain", "syncope") else 0.5):
            abnormal = r() < 0.3 or self.hr_class != 1  # a normal ECG implies a normal rate: only with HR normocardic
            items.append(self.ev("ecg_y" if abnormal else "ecg_n", (ECG, "yn"[not abnormal])))
        p_ct = {"fall": 0.75, "trauma": 0.75, "seizure": 0.6, "syncope": 0.4}.get(e, 0.05)
        if self.head_trauma:
            p_ct = 0.9
        if r() < p_ct:
            abnormal = (self.head_trauma or e == "seizure") and r() < 0.2
            items.append(self.ev("ct_y" if abnormal else "ct_n", (CT_HEAD, "yn"[not abnormal]), mm=self.randint(3, 12)))
        if r() < {"dyspnea": 0.9, "chest_pain": 0.6, "trauma": 0.5}.get(e, 0.2):
            abnormal = r() < (0.6 if e == "dyspnea" else 0.15)
            items.append(self.ev("cxr_y" if abnormal else "cxr_n", (CXR, "yn"[not abnormal])))
        if r() < 0.8:
            labs = self._labs()
            if labs:
                lab_parts = [self.txt("labs_intro") + " "]
                _join(labs, ", ", lab_parts)
                items.append(lab_parts)
        self.shuffle(items)
        out = []
        sep = self.ch((". ", "\n", "; "))
        for k, item in enumerate(items):
            if k:
                out.append(sep)
            if type(item) is list:
                out.extend(item)
            else:
                out.append(item)
        if out:
            out.append(".")
        return out

    def _labs(self) -> list:
        r, e, it = self.r, self.event, self.it
        p = {
            "hemoglobin": 0.7,
            "leukocytes": 0.65,
            "platelets": 0.6,
            "creatinine": 0.65,
            "blood-glucose": 0.6,
            "inr": 0.3,
            "c-reactive-protein": 0.8 if e == "dyspnea" else 0.4,
            "troponin": {"chest_pain": 0.95, "syncope": 0.6, "dyspnea": 0.6}.get(e, 0.15),
            "d-dimer": {"dyspnea": 0.5, "chest_pain": 0.35}.get(e, 0.03),
            "blood-alcohol": 0.5 if self.alcohol == 0 else (0.2 if e == "trauma" else 0.02),
        }
        values = {
            "hemoglobin": lambda: f"{7.5 + 9 * r():.1f}",
            "leukocytes": lambda: f"{3.5 + 18 * r():.1f}",
            "platelets": lambda: str(self.randint(80, 450)),
            "creatinine": lambda: f"{0.5 + 4 * r():.2f}",
            "blood-glucose": lambda: str(self.randint(70, 380)),
            "inr": lambda: f"{0.9 + 2.9 * r():.1f}",
            "c-reactive-protein": lambda: f"{0.1 + 25 * r():.1f}",
            "troponin": lambda: str(self.randint(2, 900)),
            "d-dimer": lambda: str(self.randint(150, 5000)),
            "blood-alcohol": (lambda: f"{0.2 + 3 * r():.2f}") if it else (lambda: str(self.randint(20, 350))),
        }
        pools = self.L["lab"]
        out = []
        for lab in LABS:
            if r() < p[lab]:
                v = values[lab]()
                if it and "." in v and r() < 0.5:
                    v = v.replace(".", ",")
                out.append((self.ch(pools[lab]).format(v=v), ((lab, "measured"),)))
        return out

    def course(self, words_needed: int) -> list:
        """Timed ED-course entries until about words_needed words; no entry repeats before the pool is used up."""
        r, out = self.r, []
        minutes = int(r() * 1440)
        sep = " " if r() < 0.5 else "\n"
        pool = COURSE[(self.lang, self.sex)]
        size = len(pool)
        k = int(r() * size)
        step = self.ch(COPRIME_STEPS[size])  # walking the pool by a step coprime with its size visits every entry once
        consult = self.ch(self.L["consult"][self.event]) if words_needed > 25 else None
        if consult:
            words_needed -= consult.count(" ") + 1
        while words_needed > 0:
            k = (k + step) % size
            minutes += 5 + int(r() * 46)
            entry, words, timed = pool[k]
            if timed:
                entry = entry.format(
                    hh=f"{minutes // 60 % 24:02d}",
                    mm=f"{minutes % 60:02d}",
                    n=1 + int(r() * 9),
                    ml=(250, 500, 1000)[int(r() * 3)],
                )
            out.append(entry)
            words_needed -= words
        if consult:
            out.insert(int(r() * 3), consult)  # among the first entries
        return [sep.join(out)] if out else []


def _cap(part):
    """The part with its first letter upper-case (for a part that starts a sentence)."""
    if type(part) is str:
        return part[:1].upper() + part[1:]
    return part[0][:1].upper() + part[0][1:], part[1]


def _join(items: list, sep: str, out: list) -> None:
    for k, item in enumerate(items):
        if k:
            out.append(sep)
        out.append(item)


# --------------------------------------------------------------------------------------------
# Files


def write_corpus(
    path_notes_jsonl: str | Path, path_annotations_jsonl: str | Path, n: int, *, include_unknown: bool = True, **kw
) -> dict:
    """Write n notes and their gold annotations as the two JSONL files the app imports.

    notes:        {"id", "text", "metadata": {...}}                  one note per line
    annotations:  {"note_id", "task", "label", "evidence": [[s, e]]}  one (note, task) per line
    `include_unknown=False` leaves out the "unknown" labels (no evidence) to save space.
    Other keywords go to generate_notes. Returns counts and the time taken.
    """
    import time

    started = time.perf_counter()
    dumps = json.dumps
    notes = annotations = 0
    prefix_cache: dict[tuple[str, str], str] = {}
    with open(path_notes_jsonl, "w", encoding="utf-8") as nf, open(path_annotations_jsonl, "w", encoding="utf-8") as af:
        for note in generate_notes(n, **kw):
            nf.write(dumps({"id": note.id, "text": note.text, "metadata": note.metadata}, ensure_ascii=False))
            nf.write("\n")
            note_id = dumps(note.id)
            lines = []
            for ann in note.annotations:
                if not include_unknown and ann.label == UNKNOWN:
                    continue
                key = (ann.task, ann.label)
                middle = prefix_cache.get(key)
                if middle is None:
                    middle = f', "task": {dumps(ann.task)}, "label": {dumps(ann.label)}, "evidence": ['
                    prefix_cache[key] = middle
                spans = ", ".join(f"[{s}, {e}]" for s, e in ann.evidence)
                lines.append(f'{{"note_id": {note_id}{middle}{spans}]}}\n')
            af.write("".join(lines))
            notes += 1
            annotations += len(lines)
    seconds = time.perf_counter() - started
    return {
        "notes": notes,
        "annotations": annotations,
        "seconds": seconds,
        "notes_per_second": notes / seconds if seconds else float("inf"),
    }
