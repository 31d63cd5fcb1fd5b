"""De-identification in the app: a project's policy, de-identifying a corpus into a new one,
residual scans, the gate before anything leaves. The finding and replacing is ml.deid."""
