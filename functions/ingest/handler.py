"""ingest: the write routes of the API (ingest, replace, forget) and the direct-invoke write actions."""

from hippocampus.http import api_function
from hippocampus.write_api import DIRECT_ACTIONS, router

lambda_handler = api_function(router, DIRECT_ACTIONS)
