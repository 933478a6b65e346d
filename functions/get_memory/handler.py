"""get_memory: the read routes of the API and the direct-invoke read actions.

Nothing heavy is imported here: no openai, no X-Ray SDK — this is the latency-critical path.
"""

from hippocampus.wiring import get_memory_handler

lambda_handler = get_memory_handler()
