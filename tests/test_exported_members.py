import hf_rgda

EXPECTED = [
    "DEFAULT_LLM", "LLM", "META_COLUMNS", "METHODS", "AugmentConfig", "AuthenticationError", "BackendError",
    "Completion", "ConfigError", "ConnectionError", "InputError", "ParseError", "ProvisionError", "RGDAAugmenter",
    "RGDAError", "RateLimitError", "RefusalError", "ResponseCache", "RunSummary", "SchemaError", "ScriptedLLM",
    "ServerError", "TimeoutError", "Usage", "__version__", "entity_length_limits", "load_llm",
]


def test_exported_members() -> None:
    assert hf_rgda.__all__ == EXPECTED
    for name in hf_rgda.__all__:
        assert hasattr(hf_rgda, name), name
