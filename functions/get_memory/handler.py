"""get_memory: the read routes of the API and the direct-invoke read actions.

Nothing heavy is imported here: no openai, no X-Ray SDK — this is the latency-critical path.
"""

from hippocampus.http import api_function
from hippocampus.read_api import DIRECT_ACTIONS, router

lambda_handler = api_function(router, DIRECT_ACTIONS)
