"""`make_pii_detector` picks the detector of MEMORY_PII_DETECTOR; each is imported on demand."""

from hippocampus.contracts.errors import ConfigurationError
from hippocampus.contracts.pii import PiiDetector, PiiDetectorName


def make_pii_detector(name: PiiDetectorName) -> PiiDetector:
    """The detector `name`; ConfigurationError when its libraries are not installed (the `pii`
    layer, which the CDK app attaches when masking is on)."""
    match name:
        case "patterns":
            try:
                from hippocampus.adapters.pii.patterns import PatternDetector
            except ImportError as error:
                raise ConfigurationError(
                    f"MEMORY_PII=mask with MEMORY_PII_DETECTOR=patterns needs {error.name} "
                    "(layers/pii/requirements.txt)"
                ) from error
            return PatternDetector()
        case "comprehend":
            from hippocampus.adapters.pii.comprehend import ComprehendDetector

            return ComprehendDetector()
