"""What llama-cpp-python's ``create_chat_completion`` would run for a chat request, without running it
(:func:`chat_request`): the local engine's parallel slots (:mod:`hf_rgda.llm.slots`) decode it themselves."""

from __future__ import annotations

from typing import Any

__all__ = ["chat_request"]


class _Recorder:
    """A stand-in for ``Llama`` in its chat handler: tokenizes with the real model and records the completion request
    instead of running it."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama
        self.request: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.request = kwargs
        return {"id": "cmpl-recorded", "object": "text_completion", "created": 0, "model": "",
                "choices": [{"text": "", "index": 0, "logprobs": None, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def chat_request(llama: Any, req: Any) -> None:
    """Fill ``req`` with what ``llama.create_chat_completion(messages=req.messages, **req.chat)`` would run: the chat
    template's prompt tokens, stop strings, seed, ``max_tokens`` and sampler arguments (grammar included), as
    llama-cpp-python sets them (its ``create_chat_completion`` runs with the recorder in the place of ``llama``)."""
    from llama_cpp import Llama

    recorder = _Recorder(llama)
    Llama.create_chat_completion(recorder, messages=req.messages, **req.chat)  # type: ignore[arg-type]  # its defaults too
    kw = recorder.request
    if not isinstance(kw["prompt"], list):
        raise ValueError(f"the chat handler of {llama.chat_format!r} passes no prompt tokens")  # noqa: TRY004 - a BackendError for the caller
    stop = kw["stop"] or []
    req.prompt, req.stop = list(kw["prompt"]), [x.encode() for x in ([stop] if isinstance(stop, str) else stop)]
    req.seed, req.max_tokens = int(kw["seed"] or 0), int(kw["max_tokens"] or 0)
    req.sampling = {"temp": kw["temperature"], "grammar": kw["grammar"], **{k: kw[k] for k in _SAMPLING}}


#: the ``create_completion`` arguments that ``Llama._init_sampler`` takes under the same name
_SAMPLING = ("top_k", "top_p", "min_p", "typical_p", "repeat_penalty", "frequency_penalty", "presence_penalty", "tfs_z",
             "mirostat_mode", "mirostat_tau", "mirostat_eta")
