"""The gold tasks the generator labels (catalog slugs), its note and annotation records, and the
check, at import, that every label it writes is an option of its task in the catalog."""

from __future__ import annotations

from dataclasses import dataclass

from ml.catalog import catalog_index, load_catalog

LANGUAGES = ("en", "it", "mixed")

# Gold tasks (catalog slugs).
HR, BP, SPO2, TEMP, RR = "heart-rate", "blood-pressure", "spo2", "body-temperature", "respiratory-rate"
AVPU = "level-of-consciousness"
ACAP = "anticoagulants-or-antiplatelet-drug-therapy"
AED, AHT = "antiepileptic-therapy-already-in-place", "antihypertensive-therapy"
CHF, CKD, DIAL = "chronic-cardiac-failure", "chronic-renal-failure", "chronic-dialysis"
PMK, EPI = "presence-of-pacemaker", "known-history-of-epilepsy"
ALC, ALLERGY = "history-of-alcohol-abuse", "history-of-allergy"
ALONE, MOBILITY = "living-alone", "level-of-autonomy-mobility"
TRAUMA, CONCUSSIVE = "head-or-other-districts-trauma", "concussive-head-trauma"
DURATION, PRODROME = "duration-of-the-patients-unconsciousness", "presence-of-prodromal-symptoms"
EFFORT = "tloc-during-effort"
TONIC_CLONIC, TONGUE = "tonic-clonic-seizures", "tongue-bite"
CHEST_PAIN, DYSPNEA = "chest-pain", "presence-of-dyspnea"
ECG, CT_HEAD, CXR = "ecg-any-abnormality", "brain-ct-scan-any-abnormality", "chest-rx-any-abnormalities"
LABS = (
    "hemoglobin",
    "leukocytes",
    "platelets",
    "creatinine",
    "blood-glucose",
    "inr",
    "c-reactive-protein",
    "troponin",
    "d-dimer",
    "blood-alcohol",
)
GOLD_TASKS = (
    HR,
    BP,
    SPO2,
    TEMP,
    RR,
    AVPU,
    ACAP,
    AED,
    AHT,
    CHF,
    CKD,
    DIAL,
    PMK,
    EPI,
    ALC,
    ALLERGY,
    ALONE,
    MOBILITY,
    TRAUMA,
    CONCUSSIVE,
    DURATION,
    PRODROME,
    EFFORT,
    TONIC_CLONIC,
    TONGUE,
    CHEST_PAIN,
    DYSPNEA,
    ECG,
    CT_HEAD,
    CXR,
    *LABS,
)
UNKNOWN = "unknown"

EVENTS = ("syncope", "fall", "trauma", "seizure", "chest_pain", "dyspnea")
EVENT_WEIGHTS = (25, 20, 12, 13, 15, 15)


@dataclass(slots=True)
class GoldAnnotation:
    task: str  # catalog slug
    description: str  # the catalog's s_T
    label: str  # one of the task's options
    evidence: list[tuple[int, int]]  # half-open character offsets into the note text


@dataclass(slots=True)
class SyntheticNote:
    id: str
    text: str
    language: str
    metadata: dict
    annotations: list[GoldAnnotation]


CATALOG = catalog_index(load_catalog())
# The labels the generator writes for each task ("y"/"n" where not listed); checked against the catalog at import.
LABELS_USED = {
    HR: ("bradycardic", "normocardic", "tachycardic"),
    BP: ("hypotensive", "normotensive", "hypertensive"),
    SPO2: ("measured",),
    TEMP: ("hypothermic", "normothermic", "hyperthermic"),
    RR: ("bradypneic", "eupneic", "tachypneic"),
    AVPU: ("A", "V", "P"),
    CHF: ("certainly chronic", "possibly chronic", "certainly not chronic"),
    CKD: ("certainly chronic", "possibly chronic", "certainly not chronic"),
    DIAL: ("certainly chronic", "certainly not chronic"),
    MOBILITY: ("walking independently", "walking with auxiliary aids", "walking with physical assistance", "bedridden"),
    DURATION: ("short", "long"),
    **{lab: ("measured",) for lab in LABS},
}


def _check_catalog() -> None:
    for slug in GOLD_TASKS:
        if slug not in CATALOG:
            raise RuntimeError(f"synthetic gold task {slug!r} is not in the task catalog")
        options = CATALOG[slug].options
        for label in (*LABELS_USED.get(slug, ("y", "n")), UNKNOWN):
            if label not in options:
                raise RuntimeError(f"synthetic label {label!r} is not an option of {slug!r} {options}")


_check_catalog()
DESCRIPTIONS = {slug: CATALOG[slug].description for slug in GOLD_TASKS}
ALLOWED_LABELS = frozenset((slug, label) for slug in GOLD_TASKS for label in CATALOG[slug].options)
