"""De-identification's rules, below the corpus app: a project's policy and how a note is
de-identified under it (policy), the kept original -> surrogate pairs (mapping), the gate before
anything leaves (gate), and the models, jobs included. The corpus import applies them, so this
package imports no app above projects and audit. What users do with them (pages, jobs, API) is
webapp.deid_ops; the finding and replacing is ml.deid."""
