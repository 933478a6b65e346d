"""Adapters: the implementations of the ports (DynamoDB, S3, SQS, LLM providers, tracing).

The only modules that import boto3; none of them imports the domain.
"""
