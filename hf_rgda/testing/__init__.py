"""Scripted fakes for tests, dry runs and benchmarks: a stage-aware answer world and provider wire-protocol servers.

Nothing here talks to a real model. Real-component tests use the local GGUF models and llama.cpp's server.
"""

from .world import FakeWorld, stage_of, stateless_answer

__all__ = ["FakeWorld", "stage_of", "stateless_answer"]
