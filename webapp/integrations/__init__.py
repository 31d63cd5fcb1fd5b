"""The app's links to services outside it: MLflow tracking (mlflow_log) and webhooks. Below the
apps whose work they report (training, evaluation, review, ...) and above projects and lifecycle:
they read a unit of work or a project they are handed, and no app page or the API is imported
here (docs/ARCHITECTURE.md, "The layers")."""
