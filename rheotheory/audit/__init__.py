"""The audit: other people's verifiers and engines against the exact target law (docs/guide/audit.md).

- :mod:`~rheotheory.audit.core`: the one law test (cells, Pearson, Bonferroni, stated power);
- :mod:`~rheotheory.audit.user`: the harness that drives a user's verifier function with toy laws;
- :mod:`~rheotheory.audit.toy`: the seeded toy law families;
- :mod:`~rheotheory.audit.examples`: reference verifiers and planted companions in both signatures;
- :mod:`~rheotheory.audit.engines`: one adapter per engine.
"""

from .core import LOSSLESS, LOSSY, LOSSY_BY_DESIGN, AuditResult, Setting, SettingResult, detectable_tv, run_audit

__all__ = ["LOSSLESS", "LOSSY", "LOSSY_BY_DESIGN", "AuditResult", "Setting", "SettingResult", "detectable_tv", "run_audit"]
