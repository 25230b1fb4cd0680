"""The stages of the methods, one file per stage family; :mod:`hf_rgda.pipeline` schedules them.

Each stage declares itself once in its own file (:class:`Stage`, :func:`register`: its name, system prompt, pure
message building and parsing, and where its record lands); :data:`PLANS` lists each method's stages, and nothing else
names them (:mod:`.registry`).

- :mod:`.attribution`: WHERE, the words to replace (``biorda``, ``where=True``).
- :mod:`.seed_generation`: new versions of the seed, and the targeted repair re-ask.
- :mod:`.guidance`: the guide, and its Guidance Refiner loop.
- :mod:`.composer`: sentences from the guide with planned entities, and its Augmentation Calibrator loop.
- :mod:`.judge`: the judge loop both refiners are (Algorithm 1).
- :mod:`.debate`: WHICH (``biorda``'s Advise-Reflect-Revise debate) and the ``debate_review`` stage; :mod:`.panel`:
  the reviewer rounds both run.
- :mod:`.completeness`: the model lists a row's mentions; one it left untagged that the verifier confirms rejects it.
- :mod:`.sense_gate`: a sentence whose least likely tokens read far below its seed's is rejected.
- :mod:`.verify`: one multiple-choice question per tagged entity, read as the probability of its type;
  :mod:`.categories`: the question and its options.
- :mod:`.base`: what they share: the run, a step, writing and checking sentences.
"""

from .attribution import Where
from .base import Each, Run, Step
from .completeness import Completeness
from .composer import Composer, EntityPool
from .debate import Review, Which, run_debate, run_review
from .guidance import Guidance
from .judge import JudgeLoop
from .registry import PLANS, STAGES, Stage, call_step, register, system_prompts
from .seed_generation import Repair, SeedGeneration
from .sense_gate import SenseGate
from .verify import Verify

__all__ = ["PLANS", "STAGES", "Completeness", "Composer", "Each", "EntityPool", "Guidance", "JudgeLoop", "Repair", "Review", "Run",
           "SeedGeneration", "SenseGate", "Stage", "Step", "Verify", "Where", "Which", "call_step", "register", "run_debate",
           "run_review", "system_prompts"]
