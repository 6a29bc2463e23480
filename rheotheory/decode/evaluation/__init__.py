"""What the real-model commands measure: speed, acceptance, tree size and losslessness.

- :mod:`.bench`: tokens per step and wall-clock speed-up against autoregressive sampling
  (``rheo bench``).
- :mod:`.curve`: tokens per step against temperature, paired across methods and resumable
  (``rheo bench --out``).
- :mod:`.budget`: ``--budget auto``, the tree size that pays most on this device.
- :mod:`.checks`: the calibrated Monte-Carlo lossless check with real models.

Importing this package loads nothing; each module needs the ``torch`` extra.
"""
