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

import bisect
import itertools
import json
import math
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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
LABS = ("hemoglobin", "leukocytes", "platelets", "creatinine", "blood-glucose", "inr",
        "c-reactive-protein", "troponin", "d-dimer", "blood-alcohol")
GOLD_TASKS = (HR, BP, SPO2, TEMP, RR, AVPU, ACAP, AED, AHT, CHF, CKD, DIAL, PMK, EPI, ALC, ALLERGY,
              ALONE, MOBILITY, TRAUMA, CONCUSSIVE, DURATION, PRODROME, EFFORT, TONIC_CLONIC, TONGUE,
              CHEST_PAIN, DYSPNEA, ECG, CT_HEAD, CXR, *LABS)
UNKNOWN = "unknown"

EVENTS = ("syncope", "fall", "trauma", "seizure", "chest_pain", "dyspnea")
_EVENT_WEIGHTS = (25, 20, 12, 13, 15, 15)


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


# --------------------------------------------------------------------------------------------
# Phrase pools. "{o}" is the Italian gender ending, "{spouse}" the partner; both are filled per
# sex when the module loads. Other fields ({v}, {age}, ...) are filled per note.

_IT = {
    "headers": {
        "reason": ["Motivo dell'accesso", "MOTIVO DI ACCESSO", "Motivo accesso"],
        "triage": ["Triage", "TRIAGE", "Parametri all'ingresso", "PV"],
        "hpi": ["Anamnesi patologica prossima", "APP", "Anamnesi recente"],
        "pmh": ["Anamnesi patologica remota", "APR", "In anamnesi", "Anamnesi"],
        "meds": ["Terapia domiciliare", "Tp domiciliare", "Terapia in atto"],
        "exam": ["Esame obiettivo", "EO", "E.O.", "Obiettività"],
        "workup": ["Accertamenti", "Esami", "Esami eseguiti"],
        "course": ["Decorso in PS", "Diario clinico", "Decorso"],
        "dispo": ["Esito", "Disposizione", "Conclusioni"],
    },
    "triage_code": ["Codice giallo.", "Codice verde.", "Codice arancione.", "codice azzurro,", "Cod. giallo -", ""],
    "hr": ["FC {v} bpm", "FC {v}", "FC: {v} bpm", "fc {v}/min", "FC {v} b/min"],
    "bp": ["PA {s}/{d} mmHg", "PA {s}/{d}", "PAO {s}/{d} mmHg", "PA: {s}/{d}"],
    "spo2": ["SatO2 {v}% in aa", "SpO2 {v}% aa", "Sat {v}%", "SatO2 {v}% in O2 {l} l/min", "SpO2: {v}%"],
    "temp_c": ["TC {t}°C", "T {t}°C", "TC {t}", "temp {t}°C", "T ascellare {t}°C"],
    "temp_f": [],
    "rr": ["FR {v} atti/min", "FR {v}", "FR: {v}/min"],
    "avpu_A": ["vigile e orientat{o}", "vigile, orientat{o} nei 3 parametri", "GCS 15",
               "vigile, collaborante, GCS 15", "vigile"],
    "avpu_V": ["soporos{o}, risvegliabile alla chiamata", "GCS 13, risponde allo stimolo verbale",
               "sonnolent{o} ma risvegliabile alla chiamata, GCS 14"],
    "avpu_P": ["risponde solo allo stimolo doloroso", "GCS 8, reattiv{o} solo al dolore",
               "GCS 7 (E2V2M3), risponde solo a stimoli dolorosi"],
    "intro": ["Pz di {age} aa", "{Sig} di {age} anni", "Paziente di {age} aa", "Pz {age}enne", "{age} aa, {sex}"],
    "arrival": ["giunge in PS con 118", "accompagnat{o} dai familiari", "giunge in PS con mezzi propri",
                "inviat{o} dal MMG", ""],
    "cc": {
        "syncope": ["Sincope", "PdC", "Episodio sincopale"],
        "fall": ["Caduta accidentale", "Caduta a domicilio"],
        "trauma": ["Incidente stradale", "Aggressione", "Caduta dalla bicicletta"],
        "seizure": ["Crisi convulsiva", "Crisi comiziale"],
    },
    "cc_trauma_ev": ["Politrauma", "Trauma della strada"],
    "cc_cp": ["Dolore toracico", "DOLORE TORACICO"],
    "cc_dys": ["Dispnea", "Dispnea ingravescente"],
    "lead_fall": ["per ", "riferisce ", ""],
    "lead_trauma": ["per ", "vittima di ", ""],
    "lead_seizure": ["per ", "riferita ", ""],
    "lead_chest_pain": ["riferisce ", "lamenta ", "per "],
    "lead_dyspnea": ["riferisce ", "lamenta ", "per "],
    "syncope_event": ["riferisce episodio sincopale", "per episodio di PdC", "per sincope", "riferisce TLOC"],
    "effort_y": ["durante sforzo fisico", "mentre saliva le scale", "mentre correva"],
    "effort_n": ["a riposo", "in posizione seduta, a riposo"],
    "prodrome_y": ["preceduta da sudorazione algida e nausea", "preceduta da offuscamento del visus e astenia",
                   "con prodromi (cardiopalmo, sudorazione)"],
    "prodrome_n": ["senza prodromi", "non preceduta da prodromi", "nega prodromi"],
    "dur_short": ["PdC di pochi secondi", "PdC di breve durata (circa {s} secondi)", "breve PdC (pochi secondi)"],
    "dur_long": ["PdC prolungata (circa {m} minuti)", "PdC di circa {m} minuti", "prolungata PdC (> {m} min)"],
    "fall_event": ["caduta accidentale a domicilio", "caduta dalle scale", "caduta in bagno",
                   "caduta in strada per inciampo"],
    "trauma_event": ["incidente stradale (auto vs moto)", "incidente stradale, conducente di auto con airbag esplosi",
                     "aggressione in strada", "caduta dalla bicicletta", "trauma sportivo (calcio)"],
    "tr_head_conc": ["trauma cranico commotivo", "trauma cranico con PdC"],
    "tr_head_noconc": ["trauma cranico non commotivo", "trauma cranico senza PdC"],
    "tr_head": ["trauma cranico", "trauma cranio-facciale", "trauma cranico in regione occipitale"],
    "tr_other": ["trauma contusivo all'emitorace dx", "trauma distorsivo alla caviglia sx", "trauma al polso dx",
                 "trauma contusivo al ginocchio sx", "trauma contusivo all'anca dx"],
    "tr_none": ["nega traumatismi", "non riferiti traumi", "senza traumatismi"],
    "seizure_event": ["episodio critico riferito dai familiari", "crisi comiziale a domicilio",
                      "episodio critico testimoniato"],
    "tcs_y": ["crisi tonico-clonica generalizzata", "crisi convulsiva tonico-clonica"],
    "tcs_n": ["crisi focale senza secondaria generalizzazione", "crisi focale motoria, non generalizzata"],
    "tongue_y": ["morsus linguae", "morsus laterale della lingua"],
    "tongue_n": ["non morsus", "non morsus linguae"],
    "seizure_extra": ["con perdita di urine", "durata riferita circa 2 minuti", "con successivo sopore", ""],
    "cp_y": ["dolore toracico retrosternale oppressivo", "dolore toracico puntorio all'emitorace sx",
             "dolore toracico costrittivo"],
    "cp_onset": ["insorto da circa {h} ore", "insorto stamattina", "irradiato al braccio sx", "non irradiato",
                 "insorto a riposo"],
    "dys_y": ["dispnea ingravescente", "dispnea da sforzo", "dispnea a riposo"],
    "dys_onset": ["da {d} giorni", "da circa {d} gg", "associata a tosse produttiva", "peggiorata nella notte"],
    "cp_n": ["nega dolore toracico", "non dolore toracico"],
    "dys_n": ["nega dispnea", "non dispnea"],
    "cp_dys_n": ["nega dolore toracico e dispnea"],
    "chf_cert": ["scompenso cardiaco cronico", "SCC in classe NYHA II",
                 "cardiopatia dilatativa con scompenso cardiaco cronico (FE {ef}%)",
                 "insufficienza cardiaca cronica (FE {ef}%)"],
    "chf_poss": ["sospetto scompenso cardiaco cronico (non documentato)",
                 "probabile scompenso cardiaco, in corso di accertamenti"],
    "chf_not": ["non storia di scompenso cardiaco", "nega scompenso cardiaco"],
    "ckd_cert": ["IRC stadio IIIb", "insufficienza renale cronica (stadio {st})", "IRC in follow-up nefrologico"],
    "ckd_poss": ["sospetta IRC, funzione renale di base non nota",
                 "probabile insufficienza renale cronica, mai approfondita"],
    "ckd_not": ["nega nefropatie", "non storia di insufficienza renale"],
    "ckd_dial": ["IRC terminale in emodialisi trisettimanale", "IRC in dialisi peritoneale",
                 "IRC in trattamento emodialitico (lun-mer-ven)"],
    "ckd_nodial": ["IRC stadio IV, non in dialisi", "IRC stadio {st}, non ancora in trattamento dialitico"],
    "pmk_y": ["portatore di PMK", "PMK bicamerale per BAV completo", "portatore di pacemaker dal {yr}"],
    "pmk_n": ["non portatore di PMK", "non pacemaker"],
    "epi_y": ["epilessia nota", "epilessia in trattamento dall'infanzia", "epilessia generalizzata idiopatica"],
    "epi_n": ["nega storia di epilessia", "non storia di crisi comiziali"],
    "alc_y": ["etilista", "abuso etilico cronico", "potus: abuso alcolico quotidiano",
              "potus +++ (circa 1 L di vino/die)"],
    "alc_n": ["nega potus", "astemi{o}", "non abuso alcolico"],
    "allergy_y": ["allergia a penicillina", "allergic{o} ai FANS", "Allergie: penicillina (orticaria)",
                  "allergia al mezzo di contrasto iodato"],
    "allergy_n": ["nega allergie", "Allergie: nega", "nessuna allergia nota"],
    "alone_y": ["vive sol{o}", "vive da sol{o}"],
    "alone_n": ["vive con {spouse}", "vive con la figlia", "vive con il figlio", "vive in RSA"],
    "mob_independent": ["deambula autonomamente", "autonom{o} nella deambulazione"],
    "mob_aids": ["deambula con bastone", "deambula con deambulatore", "deambula con ausilio (bastone)"],
    "mob_assist": ["deambula con l'aiuto di una persona", "deambula solo se assistit{o}"],
    "mob_bedridden": ["allettat{o}", "allettat{o} da mesi"],
    "smoke": ["ex fumatore", "fumatore (20 sig/die)", "non fumatore", "fumatore di 10 sigarette/die"],
    "pmh_neutral": ["ipertensione arteriosa", "DM tipo 2 in terapia insulinica", "DM2 in terapia con ADO",
                    "dislipidemia",
                    "ipotiroidismo", "pregressa colecistectomia", "IPB", "gonartrosi bilaterale",
                    "sindrome ansioso-depressiva",
                    "BPCO", "cardiopatia ischemica (PTCA + stent su IVA nel {yr})", "pregresso ictus ischemico ({yr})",
                    "ipoacusia", "pregressa appendicectomia", "MRGE", "osteoporosi", "glaucoma",
                    "pregressa frattura di femore dx ({yr})"],
    "acap_y": ["apixaban 5 mg x2", "rivaroxaban 20 mg", "warfarin (Coumadin) secondo INR", "edoxaban 60 mg",
               "dabigatran 150 mg x2",
               "cardioaspirina 100 mg", "ASA 100 mg", "clopidogrel 75 mg", "ticagrelor 90 mg x2", "TAO con warfarin"],
    "acap_n": ["non in terapia anticoagulante né antiaggregante", "nega assunzione di anticoagulanti o antiaggreganti",
               "no TAO/NAO, no antiaggreganti"],
    "aed_y": ["levetiracetam 500 mg x2", "Keppra 1000 mg x2", "acido valproico 500 mg x2", "Depakin chrono 500 mg x2",
              "carbamazepina 200 mg x3", "lamotrigina 100 mg x2"],
    "aed_n": ["non in terapia antiepilettica", "non assume antiepilettici"],
    "aht_y": ["ramipril 5 mg", "amlodipina 5 mg", "valsartan 80 mg", "olmesartan/idroclorotiazide 20/12.5 mg",
              "enalapril 10 mg"],
    "no_meds": ["nessuna terapia domiciliare", "non assume farmaci a domicilio"],
    "meds_neutral": ["metformina 1000 mg x2", "insulina glargine {u} UI la sera", "insulina lispro ai pasti",
                     "atorvastatina 20 mg",
                     "levotiroxina {mcg} mcg", "pantoprazolo 40 mg", "tamsulosina 0.4 mg", "sertralina 50 mg",
                     "allopurinolo 300 mg", "colecalciferolo 25000 UI/mese"],
    "meds_intro": ["In terapia con", "Assume", ""],
    "exam_neutral": ["Cute e mucose normoidratate", "Torace: MV presente su tutto l'ambito, non rumori aggiunti",
                     "Torace: NAD",
                     "Cuore: toni validi, pause libere",
                     "Addome: trattabile, non dolente né dolorabile alla palpazione, peristalsi presente",
                     "Arti inferiori: non edemi, non segni di TVP", "Non deficit neurologici focali",
                     "Pupille isocoriche, isocicliche, normoreagenti", "Nuca libera",
                     "Giordano negativo bilateralmente",
                     "Murphy negativo", "Blumberg negativo", "Lingua umida", "Romberg negativo"],
    "ecg_n": ["ECG: RS, nei limiti", "ECG: ritmo sinusale, non alterazioni acute del tratto ST",
              "ECG: RS, PR e QT nei limiti, non turbe della ripolarizzazione"],
    "ecg_y": ["ECG: RS, BBDx completo", "ECG: BBSx di nuova insorgenza", "ECG: sottoslivellamento ST in V4-V6",
              "ECG: T negative in sede inferiore", "ECG: BAV I grado", "ECG: QTc lungo (510 ms)",
              "ECG: sopraslivellamento ST in D2, D3, aVF"],
    "ct_n": ["TC encefalo: non lesioni emorragiche o ischemiche acute", "TC encefalo negativa per lesioni acute",
             "TC cranio: nulla di patologico"],
    "ct_y": ["TC encefalo: ematoma subdurale fronto-parietale dx di {mm} mm", "TC encefalo: ESA in sede frontale sx",
             "TC cranio: frattura composta della squama temporale dx",
             "TC encefalo: lesione ipodensa in sede parietale sx"],
    "cxr_n": ["RX torace: non addensamenti parenchimali in atto", "RX torace: nulla di rilevante",
              "Rx torace negativo"],
    "cxr_y": ["RX torace: addensamento basale dx", "RX torace: versamento pleurico bilaterale",
              "Rx torace: segni di congestione del piccolo circolo", "RX torace: PNX apicale sx"],
    "labs_intro": ["Esami ematochimici:", "EE:", "Laboratorio:", "Esami ematici:"],
    "lab": {
        "hemoglobin": ["Hb {v} g/dL", "Hb {v}"], "leukocytes": ["GB {v} x10^3/uL", "GB {v}"],
        "platelets": ["PLT {v} x10^3/uL", "PLT {v}"], "creatinine": ["creatinina {v} mg/dL", "creat {v}"],
        "blood-glucose": ["glicemia {v} mg/dL",
                          "glic {v}"], "inr": ["INR {v}"], "c-reactive-protein": ["PCR {v} mg/dL", "PCR {v}"],
        "troponin": ["TnI-hs {v} ng/L", "troponina hs {v} ng/L"], "d-dimer": ["D-dimero {v} ng/mL", "DD {v}"],
        "blood-alcohol": ["alcolemia {v} g/L", "etanolemia {v} g/L"],
    },
    "course": ["h {hh}:{mm} rivalutazione: pz asintomatic{o}, riferisce benessere.",
               "h {hh}:{mm} pz tranquill{o}, in attesa di esiti.",
               "Posizionato accesso venoso periferico ed eseguito prelievo.", "Somministrato paracetamolo 1 g ev.",
               "Somministrati ketorolac 30 mg ev e pantoprazolo 40 mg ev.", "Somministrato ondansetron 4 mg ev.",
               "Informati i familiari.",
               "Contattato il MMG.", "In attesa di posto letto.", "h {hh}:{mm} invariato il quadro clinico.",
               "Ultimo pasto alle ore {hh}:{mm}.", "Vaccinazione antinfluenzale eseguita.",
               "Si richiede documentazione clinica precedente.", "Pz collaborante, accompagnat{o} dai familiari.",
               "h {hh}:{mm} pz riferisce lieve miglioramento della sintomatologia.",
               "Si attende referto radiologico definitivo.",
               "Riferisce recente visita dal MMG per controllo di routine.", "h {hh}:{mm} parlato con i familiari.",
               "Esegue minzione spontanea.", "Eseguito stick urine.", "h {hh}:{mm} infusione di SF {ml} ml.",
               "h {hh}:{mm} pz al bagno accompagnat{o} dal personale.",
               "Richiesta valutazione dell'assistente sociale.",
               "h {hh}:{mm} familiari informati telefonicamente.", "Pz in barella, sala {n}.",
               "Digiuno in attesa di esiti.",
               "h {hh}:{mm} visionati referti di laboratorio.", "h {hh}:{mm} cambio turno, pz affidat{o} al collega.",
               "Riferisce di abitare al {n}° piano senza ascensore.", "Riferisce ultima evacuazione ieri.",
               "Riferisce di aver dormito poco nelle ultime notti.", "Vaccinazione anti-COVID completata.",
               "Nessun viaggio recente all'estero.", "h {hh}:{mm} portat{o} in radiologia.",
               "h {hh}:{mm} rientrat{o} dalla radiologia.", "NRS {n}/10.", "h {hh}:{mm} NRS {n}/10.",
               "h {hh}:{mm} somministrata seconda dose di paracetamolo.",
               "Documentazione precedente visionata: nulla di rilevante per l'accesso attuale.",
               "Tessera sanitaria acquisita.",
               "Riferisce ultimo accesso in PS {n} anni fa.", "Figlio reperibile al numero in cartella.",
               "h {hh}:{mm} pz chiede informazioni sui tempi di attesa.",
               "Richiesto trasporto sanitario per il rientro.",
               "Consegnati effetti personali ai familiari.", "Riferisce appetito conservato.", "Diuresi valida.",
               "Riferisce calo ponderale di circa {n} kg negli ultimi mesi.",
               "h {hh}:{mm} in attesa di consulenza specialistica."],
    "consult": {
        "syncope": ["Consulenza cardiologica: si consiglia Holter ECG ed ecocardiogramma.",
                    "Consulenza neurologica: non indicazione ad ulteriori accertamenti urgenti."],
        "fall": ["Consulenza ortopedica: non indicazione chirurgica, controllo ambulatoriale.",
                 "Consulenza geriatrica: si consiglia rivalutazione della terapia domiciliare."],
        "trauma": ["Consulenza chirurgica: non urgenze chirurgiche in atto.",
                   "Consulenza ortopedica: tutore e controllo ambulatoriale a 7 gg.",
                   "Consulenza neurochirurgica: indicazione a TC di controllo a 24 ore."],
        "seizure": ["Consulenza neurologica: si consiglia EEG ambulatoriale.",
                    "Consulenza neurologica: adeguare la terapia in atto, controllo ambulatoriale."],
        "chest_pain": ["Consulenza cardiologica: si consiglia ecocardiogramma.",
                       "Consulenza cardiologica: indicazione a coronarografia."],
        "dyspnea": ["Consulenza pneumologica: si consiglia spirometria ambulatoriale.",
                    "Consulenza cardiologica: si consiglia ecocardiogramma."],
    },
    "dispo_critical": ["Ricovero in Rianimazione.", "Trasferit{o} in Terapia Intensiva."],
    "alone_n_young": ["vive con i genitori", "vive con la compagna", "vive con il compagno", "vive con i coinquilini"],
    "dispo": {
        "syncope": ["Ricovero in Medicina Interna.", "Trasferit{o} in OBI per monitoraggio.",
                    "Ricovero in Cardiologia.",
                    "Dimess{o} con indicazione a controllo dal MMG."],
        "fall": ["Dimess{o} a domicilio.", "Trasferit{o} in OBI per osservazione clinica.", "Ricovero in Ortopedia.",
                 "Ricovero in Geriatria."],
        "trauma": ["Ricovero in Chirurgia d'urgenza.", "Trasferit{o} in Neurochirurgia presso HUB.",
                   "Trasferit{o} in OBI.",
                   "Dimess{o} con prognosi di 10 gg s.c."],
        "seizure": ["Ricovero in Neurologia.", "Trasferit{o} in OBI per osservazione.",
                    "Dimess{o} con visita neurologica programmata."],
        "chest_pain": ["Ricovero in UTIC.", "Trasferit{o} in Emodinamica.", "Trasferit{o} in OBI per osservazione.",
                       "Dimess{o} con indicazione a test ergometrico."],
        "dyspnea": ["Ricovero in Medicina Interna.", "Ricovero in Pneumologia.", "Trasferit{o} in OBI.",
                    "Dimess{o} con terapia."],
    },
}

_EN = {
    "headers": {
        "reason": ["CC", "Chief complaint", "Reason for visit"],
        "triage": ["Triage", "Vitals", "VS", "Triage vitals"],
        "hpi": ["HPI", "History of present illness", "Hx"],
        "pmh": ["PMH", "PMHx", "Past medical hx", "PMH/SH"],
        "meds": ["Meds", "Home meds", "Medications", "Current meds"],
        "exam": ["PE", "Exam", "Physical exam", "O/E"],
        "workup": ["Workup", "Results", "Labs/imaging", "Dx studies"],
        "course": ["ED course", "Course", "MDM", "Progress"],
        "dispo": ["Dispo", "Disposition", "Plan", "A/P"],
    },
    "triage_code": ["ESI 3.", "ESI 2.", "ESI 4 -", "Triage level 3,", ""],
    "hr": ["HR {v}", "HR {v} bpm", "HR: {v}", "pulse {v}", "P {v}"],
    "bp": ["BP {s}/{d}", "BP {s}/{d} mmHg", "BP: {s}/{d}"],
    "spo2": ["SpO2 {v}% RA", "SpO2 {v}% on RA", "sat {v}%", "O2 sat {v}% on {l}L NC", "SpO2: {v}%"],
    "temp_c": ["T {t}", "Temp {t} C", "T {t}°C"],
    "temp_f": ["T {t}F", "Temp {t} F"],
    "rr": ["RR {v}", "RR {v}/min", "RR: {v}", "resp {v}"],
    "avpu_A": ["A&Ox3", "alert and oriented", "GCS 15", "alert, oriented x3, GCS 15", "awake and alert"],
    "avpu_V": ["drowsy, rousable to voice", "GCS 13, responds to verbal stimuli",
               "lethargic but arousable to voice, GCS 14"],
    "avpu_P": ["responds to pain only", "GCS 8, responds only to painful stimuli",
               "GCS 7 (E2V2M3), withdraws to pain only"],
    "intro": ["{age} y/o {sex}", "{age}yo {sex}", "Pt is a {age} y/o {sex}", "{age} y/o {sex} w/ PMH below"],
    "arrival": ["BIBA", "brought in by family", "walk-in", "sent by PCP", ""],
    "cc": {
        "syncope": ["Syncope", "LOC", "Passed out"],
        "fall": ["Fall", "Mechanical fall", "Fall at home"],
        "trauma": ["MVC", "Assault", "Bicycle accident"],
        "seizure": ["Seizure", "Sz"],
    },
    "cc_trauma_ev": ["Trauma", "Polytrauma"],
    "cc_cp": ["Chest pain", "CP"],
    "cc_dys": ["SOB", "Dyspnea"],
    "lead_fall": ["s/p ", "after ", ""],
    "lead_trauma": ["s/p ", "after ", ""],
    "lead_seizure": ["w/ ", "after ", ""],
    "lead_chest_pain": ["c/o ", "presents w/ ", "reports "],
    "lead_dyspnea": ["c/o ", "presents w/ ", "reports "],
    "syncope_event": ["w/ syncopal episode", "s/p witnessed syncope", "c/o TLOC", "after passing out"],
    "effort_y": ["while exercising", "while climbing stairs", "during exertion"],
    "effort_n": ["at rest", "while seated at rest"],
    "prodrome_y": ["preceded by diaphoresis and nausea", "prodrome of lightheadedness and blurry vision",
                   "+ prodrome (tunnel vision, sweating)"],
    "prodrome_n": ["no prodrome", "w/o prodromal sx", "denies prodromal sx"],
    "dur_short": ["brief LOC (few seconds)", "LOC ~{s} sec", "LOC lasting a few seconds"],
    "dur_long": ["prolonged LOC (~{m} min)", "LOC approx {m} min", "LOC for > {m} min"],
    "fall_event": ["mechanical fall at home", "fall down stairs", "slip and fall in bathroom",
                   "trip and fall on sidewalk"],
    "trauma_event": ["MVC, restrained driver, + airbag deployment", "motorcycle vs car", "assaulted on street",
                     "bicycle accident", "sports injury (soccer)"],
    "tr_head_conc": ["head strike with LOC", "head injury w/ LOC"],
    "tr_head_noconc": ["head strike, no LOC", "hit head, denies LOC"],
    "tr_head": ["hit head on floor", "head injury", "occipital head strike"],
    "tr_other": ["R chest wall contusion", "L ankle sprain", "R wrist injury", "L knee contusion", "R hip contusion"],
    "tr_none": ["denies any injury", "no trauma", "no injuries"],
    "seizure_event": ["seizure-like episode witnessed by family", "seizure at home", "witnessed seizure"],
    "tcs_y": ["generalized tonic-clonic seizure", "GTC seizure"],
    "tcs_n": ["focal seizure w/o secondary generalization", "focal motor seizure, no generalization"],
    "tongue_y": ["lateral tongue bite", "+ tongue bite"],
    "tongue_n": ["no tongue bite", "denies tongue biting"],
    "seizure_extra": ["+ urinary incontinence", "lasting ~2 min per family", "postictal afterwards", ""],
    "cp_y": ["substernal chest pressure", "sharp L-sided chest pain", "pressure-like chest pain"],
    "cp_onset": ["x{h}h", "since this AM", "radiating to L arm", "non-radiating", "onset at rest"],
    "dys_y": ["worsening SOB", "progressive DOE", "shortness of breath at rest"],
    "dys_onset": ["x{d} days", "for ~{d}d", "w/ productive cough", "worse overnight"],
    "cp_n": ["denies CP", "no chest pain"],
    "dys_n": ["denies SOB", "no dyspnea"],
    "cp_dys_n": ["denies CP/SOB"],
    "chf_cert": ["CHF", "chronic HFrEF (EF {ef}%)", "CHF NYHA II", "ischemic CMP w/ chronic HF (EF {ef}%)"],
    "chf_poss": ["possible CHF, never formally dx'd", "?CHF, workup pending w/ cardiology"],
    "chf_not": ["no hx of CHF", "denies heart failure"],
    "ckd_cert": ["CKD stage 3b", "CKD {st}", "chronic kidney disease followed by nephrology"],
    "ckd_poss": ["possible CKD, baseline renal function unknown", "probable CKD, never worked up"],
    "ckd_not": ["no known kidney disease", "denies renal disease"],
    "ckd_dial": ["ESRD on HD MWF", "ESRD on peritoneal dialysis", "CKD on hemodialysis TTS"],
    "ckd_nodial": ["CKD 4, not on dialysis", "CKD stage {st}, not yet on HD"],
    "pmk_y": ["s/p PPM for CHB", "pacemaker in situ", "PPM ({yr})"],
    "pmk_n": ["no PPM", "no pacemaker"],
    "epi_y": ["known seizure d/o", "epilepsy since childhood", "hx of epilepsy"],
    "epi_n": ["no prior seizure hx", "denies hx of seizures"],
    "alc_y": ["EtOH abuse", "heavy drinker (6-8 beers/day)", "chronic alcohol use"],
    "alc_n": ["denies EtOH", "no alcohol use", "doesn't drink"],
    "allergy_y": ["allergic to PCN", "Allergies: sulfa (rash)", "PCN allergy", "allergic to iodinated contrast"],
    "allergy_n": ["NKDA", "Allergies: none", "no known allergies"],
    "alone_y": ["lives alone", "lives by self"],
    "alone_n": ["lives w/ {spouse}", "lives with daughter", "lives with son", "lives in nursing home"],
    "mob_independent": ["ambulates independently", "independent ambulation"],
    "mob_aids": ["ambulates w/ cane", "uses a walker", "ambulates with walker"],
    "mob_assist": ["ambulates w/ 1-person assist", "needs physical assistance to walk"],
    "mob_bedridden": ["bedbound", "bedridden for months"],
    "smoke": ["former smoker", "smoker 1 ppd", "never smoker", "current smoker (10 cig/day)"],
    "pmh_neutral": ["HTN", "DM2 on insulin", "T2DM on metformin", "HLD", "hypothyroidism", "s/p cholecystectomy", "BPH",
                    "OA knees", "anxiety/depression", "COPD", "CAD s/p PCI ({yr})", "hx CVA ({yr})", "hearing loss",
                    "s/p appendectomy", "GERD", "osteoporosis", "glaucoma", "s/p R hip fx ({yr})"],
    "acap_y": ["apixaban 5 mg bid", "rivaroxaban 20 mg daily", "warfarin", "Eliquis 5 mg bid", "Xarelto 20",
               "aspirin 81 mg",
               "ASA 81", "clopidogrel 75 mg", "Plavix 75", "ticagrelor 90 mg bid"],
    "acap_n": ["not on anticoagulants or antiplatelets", "no AC/AP", "denies blood thinners"],
    "aed_y": ["levetiracetam 500 mg bid", "Keppra 1000 mg bid", "valproate 500 mg bid", "Depakote 500 bid",
              "carbamazepine 200 mg tid", "lamotrigine 100 mg bid"],
    "aed_n": ["not on AEDs", "no antiepileptic meds"],
    "aht_y": ["lisinopril 10 mg", "amlodipine 5 mg", "losartan 50 mg", "HCTZ 25 mg", "valsartan 80 mg"],
    "no_meds": ["no home meds", "no regular medications"],
    "meds_neutral": ["metformin 1 g bid", "insulin glargine {u} U qhs", "insulin lispro w/ meals", "atorvastatin 20 mg",
                     "levothyroxine {mcg} mcg", "pantoprazole 40 mg", "tamsulosin 0.4 mg", "sertraline 50 mg",
                     "allopurinol 300 mg", "vitamin D"],
    "meds_intro": ["On", "Takes", ""],
    "exam_neutral": ["Gen: NAD", "Skin warm and dry", "Lungs CTAB", "Lungs: clear bilaterally, no wheezes",
                     "Heart: S1S2, no murmurs",
                     "Abd: soft, NT/ND, +BS", "Ext: no edema, no calf tenderness", "Neuro: no focal deficits", "PERRL",
                     "Neck supple", "No CVA tenderness", "Mucous membranes moist", "Romberg neg"],
    "ecg_n": ["ECG: NSR, no acute ST changes", "EKG: sinus rhythm, normal intervals", "ECG unremarkable"],
    "ecg_y": ["ECG: RBBB", "ECG: new LBBB", "ECG: ST depression V4-V6", "EKG: TWI inferior leads",
              "ECG: 1st degree AV block",
              "ECG: prolonged QTc (510 ms)", "ECG: STE II, III, aVF"],
    "ct_n": ["CT head: no acute intracranial abnormality", "CTH neg for bleed", "CT head negative"],
    "ct_y": ["CT head: R frontoparietal SDH {mm} mm", "CT head: small L frontal SAH",
             "CTH: nondisplaced R temporal skull fx",
             "CT head: L parietal hypodensity"],
    "cxr_n": ["CXR: no acute cardiopulmonary process", "CXR clear", "CXR: no infiltrate or effusion"],
    "cxr_y": ["CXR: RLL consolidation", "CXR: bilateral pleural effusions", "CXR: pulmonary vascular congestion",
              "CXR: small L apical PTX"],
    "labs_intro": ["Labs:", "Labs -", "BW:"],
    "lab": {
        "hemoglobin": ["Hgb {v}", "Hb {v} g/dL"], "leukocytes": ["WBC {v}", "WBC {v}K"], "platelets": ["Plt {v}",
                       "PLT {v}K"],
        "creatinine": ["Cr {v}", "creatinine {v} mg/dL"], "blood-glucose": ["glucose {v}",
                       "BG {v}"], "inr": ["INR {v}"],
        "c-reactive-protein": ["CRP {v} mg/dL", "CRP {v}"], "troponin": ["hs-TnT {v} ng/L", "trop {v} ng/L"],
        "d-dimer": ["D-dimer {v} ng/mL", "DD {v}"], "blood-alcohol": ["EtOH level {v} mg/dL", "BAL {v} mg/dL"],
    },
    "course": ["{hh}:{mm} reassessed, pt resting comfortably, no new complaints.",
               "{hh}:{mm} pt feeling better, awaiting results.",
               "IV access obtained, labs drawn.", "Given acetaminophen 1 g PO.", "Given ketorolac 15 mg IV.",
               "Ondansetron 4 mg IV for nausea.", "Family updated at bedside.", "Discussed w/ PCP.",
               "Awaiting bed.", "{hh}:{mm} unchanged.", "Last meal at {hh}:{mm}.", "Flu shot up to date.",
               "Old records requested.", "Pt cooperative, family at bedside.", "{hh}:{mm} pt reports mild improvement.",
               "Awaiting final radiology read.", "Saw PCP last month for routine visit.", "{hh}:{mm} spoke w/ family.",
               "Voiding spontaneously.", "UA sent.", "{hh}:{mm} NS {ml} mL running.",
               "{hh}:{mm} pt to bathroom w/ staff.",
               "SW consulted for dispo planning.", "Family updated by phone at {hh}:{mm}.", "Pt in hallway bed {n}.",
               "NPO pending results.", "{hh}:{mm} lab results reviewed.", "Signed out to oncoming team at {hh}:{mm}.",
               "Pt asks for water, ok per MD.", "Last BM yesterday.", "Reports poor sleep past few nights.",
               "COVID vaccine up to date.", "No recent travel.", "Taken to radiology at {hh}:{mm}.",
               "{hh}:{mm} back from radiology.", "Pain {n}/10.", "{hh}:{mm} pain {n}/10.",
               "{hh}:{mm} second dose of acetaminophen.",
               "Prior records reviewed, nothing relevant to current visit.", "Insurance info obtained.",
               "Last ED visit {n} yrs ago.", "Son reachable at number on file.",
               "{hh}:{mm} pt asking about wait times.",
               "Transport arranged.", "Belongings given to family.", "Appetite preserved.", "Good urine output.",
               "Reports ~{n} kg weight loss over past months.", "{hh}:{mm} awaiting specialist consult."],
    "consult": {
        "syncope": ["Cardiology consulted: Holter and echo recommended.",
                    "Neuro consulted: no further inpatient workup needed."],
        "fall": ["Ortho consulted: no operative indication, outpatient f/u.",
                 "Geriatrics consulted: med review recommended."],
        "trauma": ["Surgery consulted: no acute surgical issue.", "Ortho consulted: splint, f/u in 7 days.",
                   "Neurosurgery consulted: repeat CT in 24 h."],
        "seizure": ["Neuro consulted: outpatient EEG.", "Neuro consulted: adjust current regimen, outpatient f/u."],
        "chest_pain": ["Cardiology consulted: echo recommended.", "Cardiology consulted: plan for cath."],
        "dyspnea": ["Pulm consulted: outpatient PFTs.", "Cardiology consulted: echo recommended."],
    },
    "dispo_critical": ["Admit to ICU.", "Transfer to ICU."],
    "alone_n_young": ["lives w/ parents", "lives w/ partner", "lives w/ roommates"],
    "dispo": {
        "syncope": ["Admit to medicine.", "Obs unit for monitoring.", "Admit to cardiology.", "d/c home w/ PCP f/u."],
        "fall": ["d/c home.", "Obs unit.", "Admit to ortho.", "Admit to geriatrics."],
        "trauma": ["Admit to trauma surgery.", "Transfer to neurosurgery at level I center.", "Obs unit.",
                   "d/c home, return precautions given."],
        "seizure": ["Admit to neuro.", "Obs unit.", "d/c home w/ outpatient neuro f/u."],
        "chest_pain": ["Admit to CCU.", "To cath lab.", "Obs unit.", "d/c home w/ outpatient stress test."],
        "dyspnea": ["Admit to medicine.", "Admit to pulm.", "Obs unit.", "d/c home w/ meds."],
    },
}


def _render(pool, fill: dict):
    """Replace the per-sex tokens in every string of a (nested) pool, once, at import."""
    if isinstance(pool, str):
        for token, value in fill.items():
            pool = pool.replace(token, value)
        return pool
    if isinstance(pool, list):
        return [_render(p, fill) for p in pool]
    return {k: _render(v, fill) for k, v in pool.items()}


_LEX = {
    ("it", "M"): _render(_IT, {"{o}": "o", "{spouse}": "la moglie", "{Sig}": "Sig.", "{sex}": "M"}),
    ("it", "F"): _render(_IT, {"{o}": "a", "{spouse}": "il marito", "{Sig}": "Sig.ra", "{sex}": "F"}),
    ("en", "M"): _render(_EN, {"{spouse}": "wife"}),
    ("en", "F"): _render(_EN, {"{spouse}": "husband"}),
}

# ED-course entries as (text, words, has fields), and steps for walking a pool without repeats (_Writer.course).
_COURSE = {key: [(entry, entry.count(" ") + 1, "{" in entry) for entry in lex["course"]] for key, lex in _LEX.items()}
_COPRIME_STEPS = {size: [k for k in range(1, size) if math.gcd(k, size) == 1] or [1]
                  for size in {len(lex["course"]) for lex in _LEX.values()}}

_CATALOG = catalog_index(load_catalog())
# The labels the generator writes for each task ("y"/"n" where not listed); checked against the catalog at import.
_LABELS_USED = {
    HR: ("bradycardic", "normocardic", "tachycardic"), BP: ("hypotensive", "normotensive", "hypertensive"),
    SPO2: ("measured",), TEMP: ("hypothermic", "normothermic", "hyperthermic"),
    RR: ("bradypneic", "eupneic", "tachypneic"),
    AVPU: ("A", "V", "P"), CHF: ("certainly chronic", "possibly chronic", "certainly not chronic"),
    CKD: ("certainly chronic", "possibly chronic", "certainly not chronic"),
    DIAL: ("certainly chronic", "certainly not chronic"),
    MOBILITY: ("walking independently", "walking with auxiliary aids", "walking with physical assistance", "bedridden"),
    DURATION: ("short", "long"), **{lab: ("measured",) for lab in LABS},
}


def _check_catalog() -> None:
    for slug in GOLD_TASKS:
        if slug not in _CATALOG:
            raise RuntimeError(f"synthetic gold task {slug!r} is not in the task catalog")
        options = _CATALOG[slug].options
        for label in (*_LABELS_USED.get(slug, ("y", "n")), UNKNOWN):
            if label not in options:
                raise RuntimeError(f"synthetic label {label!r} is not an option of {slug!r} {options}")


_check_catalog()
_DESCRIPTIONS = {slug: _CATALOG[slug].description for slug in GOLD_TASKS}
_ALLOWED = frozenset((slug, label) for slug in GOLD_TASKS for label in _CATALOG[slug].options)


# --------------------------------------------------------------------------------------------
# Generation


def generate_notes(n: int, *, seed: int = 0, language: str = "en", start: int = 0, typo_rate: float = 0.02,
                   min_words: int = 80, max_words: int = 600) -> Iterator[SyntheticNote]:
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


def make_note(i: int, *, seed: int = 0, language: str = "en", typo_rate: float = 0.02,
              min_words: int = 80, max_words: int = 600) -> SyntheticNote:
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
    metadata = {"language": lang, "event": writer.event, "age": writer.age, "sex": sex, "words": words,
                "synthetic": True, "seed": seed, "index": i}
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
            if (task, label) not in _ALLOWED:
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
    annotations = [GoldAnnotation(task, _DESCRIPTIONS[task], labels.get(task, UNKNOWN), spans.get(task, []))
                   for task in GOLD_TASKS]
    return text, annotations


_NEIGHBOURS = dict(zip("abcdefghijklmnopqrstuvwxyz", ["sq", "vn", "xv", "sf", "wr", "dg", "fh", "gj", "uo", "hk",
                                                      "jl", "ko",
                                                      "nk", "bm", "ip", "ol", "wa", "et", "ad", "ry", "yi", "cb",
                                                      "qe", "zc",
                                                      "tu", "xs"]))


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
            word = word[:j] + word[j + 1] + word[j] + word[j + 2:]
        elif op < 0.6:  # drop a letter
            word = word[:j] + word[j + 1:]
        elif op < 0.8:  # double a letter
            word = word[:j] + word[j] + word[j:]
        else:  # hit a neighbouring key
            near = _NEIGHBOURS.get(word[j].lower())
            if near:
                word = word[:j] + near[r() < 0.5] + word[j + 1:]
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
        self.L = _LEX[(lang, sex)]
        self.target = target_words
        self.event = EVENTS[_pick(self.r, _EVENT_WEIGHTS)]
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
            weights = {"syncope": (25, 55, 20), "seizure": (5, 55, 40), "chest_pain": (10, 60, 30),
                       "dyspnea": (5, 45, 50)}.get(e, (8, 62, 30))
            k = _pick(r, weights)
            self.hr_class = k
            v = self.randint(*((35, 55), (62, 98), (105, 160))[k])
            items.append(self.ev("hr", (HR, _LABELS_USED[HR][k]), v=v))
        if r() < 0.85:
            k = _pick(r, {"syncope": (25, 50, 25), "trauma": (15, 60, 25)}.get(e, (8, 52, 40)))
            (s_lo, s_hi), (d_lo, d_hi) = (((65, 88), (35, 55)), ((105, 135), (60, 85)), ((150, 210), (85, 115)))[k]
            s, d = self.randint(s_lo, s_hi), self.randint(d_lo, d_hi)
            items.append(self.ev("bp", (BP, _LABELS_USED[BP][k]), s=s, d=d))
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
            items.append((phrase, ((TEMP, _LABELS_USED[TEMP][k]),)))
        if r() < (0.85 if e == "dyspnea" else 0.35):
            k = _pick(r, (3, 37, 60) if e == "dyspnea" else (5, 70, 25))
            v = self.randint(*((6, 9), (12, 20), (24, 36))[k])
            items.append(self.ev("rr", (RR, _LABELS_USED[RR][k]), v=v))
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
                clauses.append(self.ev(("dur_short", "dur_long")[k], (DURATION, ("short", "long")[k]),
                                       s=self.randint(5, 40), m=self.randint(5, 20)))
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
            pool, pairs = [("tr_head_conc", ((TRAUMA, "y"), (CONCUSSIVE, "y"))),
                           ("tr_head_noconc", ((TRAUMA, "y"), (CONCUSSIVE, "n"))),
                           ("tr_head", ((TRAUMA, "y"),)), ("tr_other", ((TRAUMA, "y"),)),
                           ("tr_none", ((TRAUMA, "n"),))][k]
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
        items = [t.format(yr=self.randint(1995, 2023)) if "{" in t else t
                 for t in dict.fromkeys(self.ch(pool) for _ in range(count))]
        k = _pick(r, (35, 4, 6, 55) if e == "dyspnea" else (12, 4, 6, 78))
        if young and k < 2 and r() < 0.8:
            k = 3
        if k < 3:
            pool = ("chf_cert", "chf_poss", "chf_not")[k]
            items.append(self.ev(pool, (CHF, _LABELS_USED[CHF][k]), ef=self.randint(20, 40)))
        k = _pick(r, (3, 4, 8, 3, 5, 77))
        if young and k < 4 and r() < 0.8:
            k = 5
        if k < 5:
            pool, pairs = [("ckd_dial", ((CKD, "certainly chronic"), (DIAL, "certainly chronic"))),
                           ("ckd_nodial", ((CKD, "certainly chronic"), (DIAL, "certainly not chronic"))),
                           ("ckd_cert", ((CKD, "certainly chronic"),)), ("ckd_poss", ((CKD, "possibly chronic"),)),
                           ("ckd_not", ((CKD, "certainly not chronic"),))][k]
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
            social.append(self.ev(pool, (MOBILITY, _LABELS_USED[MOBILITY][mob])))
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
        drugs = [t.format(u=self.randint(8, 30), mcg=self.ch((25, 50, 75, 100))) if "{" in t else t
                 for t in dict.fromkeys(self.ch(pool) for _ in range(_pick(r, (20, 25, 25, 15, 15))))]
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
        p = {"hemoglobin": 0.7, "leukocytes": 0.65, "platelets": 0.6, "creatinine": 0.65, "blood-glucose": 0.6,
             "inr": 0.3, "c-reactive-protein": 0.8 if e == "dyspnea" else 0.4,
             "troponin": {"chest_pain": 0.95, "syncope": 0.6, "dyspnea": 0.6}.get(e, 0.15),
             "d-dimer": {"dyspnea": 0.5, "chest_pain": 0.35}.get(e, 0.03),
             "blood-alcohol": 0.5 if self.alcohol == 0 else (0.2 if e == "trauma" else 0.02)}
        values = {"hemoglobin": lambda: f"{7.5 + 9 * r():.1f}", "leukocytes": lambda: f"{3.5 + 18 * r():.1f}",
                  "platelets": lambda: str(self.randint(80, 450)), "creatinine": lambda: f"{0.5 + 4 * r():.2f}",
                  "blood-glucose": lambda: str(self.randint(70, 380)), "inr": lambda: f"{0.9 + 2.9 * r():.1f}",
                  "c-reactive-protein": lambda: f"{0.1 + 25 * r():.1f}", "troponin": lambda: str(self.randint(2, 900)),
                  "d-dimer": lambda: str(self.randint(150, 5000)),
                  "blood-alcohol": (lambda: f"{0.2 + 3 * r():.2f}") if it else (lambda: str(self.randint(20, 350)))}
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
        pool = _COURSE[(self.lang, self.sex)]
        size = len(pool)
        k = int(r() * size)
        step = self.ch(_COPRIME_STEPS[size])  # walking the pool by a step coprime with its size visits every entry once
        consult = self.ch(self.L["consult"][self.event]) if words_needed > 25 else None
        if consult:
            words_needed -= consult.count(" ") + 1
        while words_needed > 0:
            k = (k + step) % size
            minutes += 5 + int(r() * 46)
            entry, words, timed = pool[k]
            if timed:
                entry = entry.format(hh=f"{minutes // 60 % 24:02d}", mm=f"{minutes % 60:02d}", n=1 + int(r() * 9),
                                     ml=(250, 500, 1000)[int(r() * 3)])
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


def write_corpus(path_notes_jsonl: str | Path, path_annotations_jsonl: str | Path, n: int, *,
                 include_unknown: bool = True, **kw) -> dict:
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
    return {"notes": notes, "annotations": annotations, "seconds": seconds,
            "notes_per_second": notes / seconds if seconds else float("inf")}
