"""Model back-ends: what computes p and q over a draft tree, behind one interface.

- :mod:`.tree_lm`: the interface every back-end meets (``cfg``, ``new_cache``, ``extend``,
  ``forward``; tree and chain masks, the KV cache) and the small tree-attention transformer
  (:class:`~rheotheory.decode.backends.tree_lm.TinyLM`, with a numpy twin).
- :mod:`.builtin`: the built-in character-level pair; :mod:`.builtin_train` trains it.
- :mod:`.smollm`: SmolLM2-135M-Instruct from its GGUF; :mod:`.smollm_pair` pairs it with a draft
  chosen by name.
- :mod:`.transformers_lm`: any Hugging Face causal language model, through ``transformers``.

Importing this package loads nothing; each module needs the ``torch`` extra.
"""
