"""The stages of the methods, one file per stage family; :mod:`hf_rgda.pipeline` schedules them.

Each stage declares itself once in its own module (:class:`Stage`, :func:`register`: its name, system prompt, its
pass, its answer in the scripted world and where its record lands; :mod:`.registry`). Every module of this package
is imported here, none named by hand: a new stage is its module and its prompt (``prompts/<name>.md``). A stage
package kept elsewhere is read with :func:`load`.

- :mod:`.attribution`: WHERE, the words to replace (``biorda``, ``where=True``).
- :mod:`.seed_generation`: new versions of the seed, and the targeted repair re-ask.
- :mod:`.guidance`: the guide, and its Guidance Refiner loop.
- :mod:`.composer`: sentences from the guide with planned entities, and its Augmentation Calibrator loop.
- :mod:`.judge`: the judge loop both refiners are (Algorithm 1).
- :mod:`.debate`: WHICH (``biorda``'s Advise-Reflect-Revise debate) and the ``debate_review`` stage; :mod:`.panel`:
  the reviewer rounds both run.
- :mod:`.completeness`: untagged spans the split's statistics propose (and, optionally, the model lists); one the
  verifier confirms rejects the row.
- :mod:`.sense_gate`: a sentence whose least likely tokens read below ``sense_quantile`` of the split's own sentences
  (or ``sense_threshold``) is rejected.
- :mod:`.verify`: one multiple-choice question per tagged entity, read as the probability of its type;
  :mod:`.categories`: the question and its options.
- :mod:`.base`: what they share: the run, a step, writing and checking sentences.
"""

import importlib
import pkgutil

from .base import Each, Run, Step
from .registry import (
           PLANS,
           STAGES,
           Stage,
           Stages,
           call_step,
           judges,
           load,
           register,
           system_prompts,
           unload,
           unregister,
)

#: the modules of this package, each imported once (a module declares its stages when imported)
MODULES = tuple(importlib.import_module(f"{__name__}.{m.name}").__name__ for m in pkgutil.iter_modules(__path__))

__all__ = ["MODULES", "PLANS", "STAGES", "Each", "Run", "Stage", "Stages", "Step", "call_step", "judges", "load",
           "register", "system_prompts", "unload", "unregister"]
