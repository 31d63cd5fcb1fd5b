"""The database helpers the apps share, beside webapp/lib/ but with Django: rows streamed in with
PostgreSQL's COPY (postgres_copy) and the planner statistics of tables written in bulk or kept
tiny (planner_stats). Below every app; they import no app."""
