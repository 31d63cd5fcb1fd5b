"""What a user does with de-identification: the policy pages, the jobs that de-identify a corpus
into a new one or scan it for identifiers left, missed-identifier reports from review, the gate's
confirmation card and the API. The rules these apply (a project's policy, the kept surrogate
mapping, the gate before data leaves) live below the corpus app, in webapp.deid, because the
corpus import applies them; this package sits above review, whose pages it extends."""
