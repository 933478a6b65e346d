"""condenser: SQS FIFO trigger; folds each user's queued items into that user's memory.

One LLM call per user per batch; a failed user's records go back to SQS in order, the other
users' records succeed (docs/architecture.md "The condenser").
"""

from hippocampus.wiring import condenser_handler

lambda_handler = condenser_handler()
