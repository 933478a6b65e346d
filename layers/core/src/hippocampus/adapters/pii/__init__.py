"""Detectors of personal data behind the `PiiDetector` port (offline patterns, Amazon Comprehend)."""
