"""Domain: reads, writes, history, condensation and consolidation, written against the ports only.

No module here imports an adapter, boto3, botocore, a Powertools event type or the environment
(tests/unit/test_architecture.py enforces it); the composition root hands the adapters in.
"""
