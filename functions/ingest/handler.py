"""ingest: the write routes of the API (ingest, replace, forget) and the direct-invoke write actions."""

from hippocampus.wiring import ingest_handler

lambda_handler = ingest_handler()
