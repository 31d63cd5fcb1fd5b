"""The database helpers the apps share, beside webapp/lib/ but with Django: rows streamed in with
PostgreSQL's COPY (postgres_copy) and the planner statistics of tables written in bulk or kept
tiny (planner_stats), and the API's pages of a query (pagination: every app's API router uses
it). Below every app; they import no app."""
