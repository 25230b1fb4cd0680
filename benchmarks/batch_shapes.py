"""Whether llama.cpp's numbers for a prompt depend on how the prompt is cut into decodes, on this build's CPU module.

The engine evaluates the same tokens in other batch shapes all the time: llama-cpp-python reuses the KV cells of the
previous call's prompt and answer (the answer's cells were computed one token at a time), kept KV states bring back
cells computed by earlier calls, and a prompt already whole in the cache has its last token evaluated alone.
llama.cpp's server documents that its logits are not guaranteed to be bit-for-bit equal across batch sizes; this
measures by how much, here. For each model (the default model and the tests' tiny one) the same tokens (the composer
prompt's first ``--tokens``) are evaluated from an empty cache in one decode, in decodes of 64, 7 and 2 tokens, and one
token at a time, with logits at every position; each shape's next-token log-probabilities are compared with the one
decode's, position by position: how many positions differ at all, the largest difference and KL divergence, and at how
many positions the most likely token changes (and how many of the positions that differ were evaluated in a decode
of two tokens or more: a prompt whose length leaves one token over has its last one evaluated alone).

Usage:
    python -m benchmarks.batch_shapes                                   # the module ggml picks for this CPU
    python -m benchmarks.batch_shapes --cpu-module libggml-cpu-zen4.so --out benchmarks/results/batch_shapes/batch_shapes_zen4.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from .common import ROOT, add_cpu_module, command, composer_tokens, llama_context, machine, use_cpu_module

SHAPES = (64, 7, 2, 1)


def measure(model_id: str, n_tokens: int, threads: int) -> dict[str, Any]:
    import llama_cpp as L
    import numpy as np

    from hf_rgda.llm.local import resolve_gguf

    model, ctx = llama_context(str(resolve_gguf(model_id)), threads, n_ctx=2048)  # repacked, llama.cpp's default
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    toks = composer_tokens(model, n_tokens)
    batch = L.llama_batch_init(512, 0, 1)

    def logprobs(step: int) -> Any:
        L.llama_memory_clear(L.llama_get_memory(ctx), True)
        rows = []
        for start in range(0, len(toks), step):
            part = toks[start : start + step]
            batch.n_tokens = len(part)
            for i, tok in enumerate(part):
                batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.seq_id[i][0] = tok, start + i, 1, 0
                batch.logits[i] = 1
            if L.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")
            rows += [np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, i), shape=(n_vocab,)).astype(np.float64)
                     for i in range(len(part))]
        x = np.stack(rows)
        x -= x.max(axis=1, keepdims=True)
        return x - np.log(np.exp(x).sum(axis=1, keepdims=True))

    whole = logprobs(len(toks))
    shapes = {}
    for step in SHAPES:
        got = logprobs(step)
        diff = np.abs(got - whole).max(axis=1)
        kl = (np.exp(whole) * (whole - got)).sum(axis=1)
        alone = np.full(len(toks), step == 1)  # positions evaluated in a decode of one token
        alone[-1] |= len(toks) % step == 1
        shapes[f"decodes of {step}"] = {
            "positions_differing": int((diff > 0).sum()),
            "positions_differing_in_decodes_of_two_or_more": int(((diff > 0) & ~alone).sum()),
            "first_position_differing": int(np.argmax(diff > 0)) if (diff > 0).any() else None,
            "max_abs_logprob_diff": round(float(diff.max()), 4),
            "max_kl": round(float(kl.max()), 6),
            "positions_top_token_changed": int((got.argmax(axis=1) != whole.argmax(axis=1)).sum())}
        print(model_id.rsplit("/", 1)[-1], step, shapes[f"decodes of {step}"], flush=True)
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)
    return {"tokens": len(toks), "against_one_decode": shapes}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=400, help="the composer prompt's first N tokens (at most all of it)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "batch_shapes" / "batch_shapes.json")
    add_cpu_module(p)
    args = p.parse_args(argv)
    use_cpu_module(args)
    from hf_rgda import DEFAULT_LLM
    from hf_rgda.llm.local import cpu_backend, load_cpu_backends
    from hf_rgda.provision import MODELS

    load_cpu_backends()
    threads = args.threads or os.cpu_count() or 1
    tiny = MODELS["tiny"]
    models = {"default": DEFAULT_LLM.split(":", 1)[1], "tiny (tests)": f"{tiny.repo_id}/{tiny.filename}"}
    out = {"command": command("batch_shapes", argv), "machine": machine(), "engine": cpu_backend(), "threads": threads,
           "models": {name: {"model": m, **measure(m, args.tokens, threads)} for name, m in models.items()}}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
