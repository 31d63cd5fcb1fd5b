"""The database helpers the apps share, beside webapp/lib/ but with Django: rows streamed in with
PostgreSQL's COPY (postgres_copy) and the planner statistics of tables written in bulk or kept
tiny (planner_stats), and what every app's API router uses: the pages of a query (pagination),
strict request bodies, the error answer and a download's zip (api). Below every app; they import
no app."""
