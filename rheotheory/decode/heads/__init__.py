"""Draft heads that read the target's own hidden states, their checkpoint formats and training.

- :mod:`.draft_head`: rheotheory's EAGLE-style head and its own format (the shipped SmolLM2 head).
- :mod:`.eagle3`: EAGLE-3 heads in the format EAGLE, SpecForge, SGLang and vLLM train and serve.
- :mod:`.train`: training a head by self-distillation from the target.

Importing this package loads nothing; each module needs the ``torch`` extra.
"""
