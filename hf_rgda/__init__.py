"""hf_rgda: reflective guidance data augmentation for NER, on the Hugging Face stack.

Example:
    >>> from hf_rgda import RGDAAugmenter
    >>> # aug = RGDAAugmenter.from_dataset(ds["train"], method="rgda")
    >>> # augmented = ds["train"].map(aug, batched=True, batch_size=8)
"""

from ._exceptions import (
    AuthenticationError,
    BackendError,
    ConfigError,
    ConnectionError,
    HubError,
    InputError,
    ParseError,
    ProvisionError,
    RateLimitError,
    RefusalError,
    RGDAError,
    SchemaError,
    ServerError,
    TimeoutError,
)
from ._version import __version__
from .augmenter import RGDAAugmenter
from .cache import ResponseCache
from .calibration import calibrate
from .canaries.thresholds import Calibration, load_calibration
from .checking import entity_length_limits
from .columns import META_COLUMNS
from .config import DEFAULT_LLM, METHODS, AugmentConfig
from .llm import LLM, Completion, ScriptedLLM, Usage, load_llm
from .summary import RunSummary
from .tagger_gate import TaggerGate

__all__ = [
    "DEFAULT_LLM",
    "LLM",
    "META_COLUMNS",
    "METHODS",
    "AugmentConfig",
    "AuthenticationError",
    "BackendError",
    "Calibration",
    "Completion",
    "ConfigError",
    "ConnectionError",
    "HubError",
    "InputError",
    "ParseError",
    "ProvisionError",
    "RGDAAugmenter",
    "RGDAError",
    "RateLimitError",
    "RefusalError",
    "ResponseCache",
    "RunSummary",
    "SchemaError",
    "ScriptedLLM",
    "ServerError",
    "TaggerGate",
    "TimeoutError",
    "Usage",
    "__version__",
    "calibrate",
    "entity_length_limits",
    "load_calibration",
    "load_llm",
]
