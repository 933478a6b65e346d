"""recall: the query and context routes of the API and the direct-invoke recall actions.

Its own function, so get_memory keeps its cold start and its permissions: this one may call the
embedding model (docs/architecture.md "Recall").
"""

from hippocampus.wiring import recall_handler

lambda_handler = recall_handler()
