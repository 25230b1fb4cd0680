import re

import hf_rgda

EXPECTED = [
    "DEFAULT_LLM", "LLM", "META_COLUMNS", "METHODS", "AugmentConfig", "AuthenticationError", "BackendError",
    "Calibration", "Completion", "ConfigError", "ConnectionError", "HubError", "InputError", "ParseError", "ProvisionError", "RGDAAugmenter",
    "RGDAError", "RateLimitError", "RefusalError", "ResponseCache", "RunSummary", "SchemaError", "ScriptedLLM",
    "ServerError", "TaggerGate", "TimeoutError", "Usage", "__version__", "calibrate", "entity_length_limits", "load_calibration", "load_llm",
]


def test_exported_members() -> None:
    assert hf_rgda.__all__ == EXPECTED
    for name in hf_rgda.__all__:
        assert hasattr(hf_rgda, name), name


def test_every_error_is_in_the_tree() -> None:
    """Every error the package raises on purpose is an RGDAError, exported from the root and drawn in the tree."""
    from hf_rgda import _exceptions, hub

    assert hub.HubError is hf_rgda.HubError
    for name in _exceptions.__all__:
        cls = getattr(hf_rgda, name)
        drawn = re.search(rf"^\W*{name}\b", _exceptions.__doc__, re.MULTILINE)
        assert issubclass(cls, hf_rgda.RGDAError) and drawn, name
