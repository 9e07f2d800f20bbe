"""Detector coverage by attack category: recall and benign FPR per category, sealed.

The unsealed report, ``report``/``weak``: taxonomy-stratified recall and benign FPR from raw
rows, and the weak categories against the exact previous report.
The sealed benchmark, ``trust``/``holdout``/``scope``/``benchmark``/``lineage``: a sealed,
signed holdout measured under a signed scope, giving ELIGIBLE or HOLD,
reserved in an append-only lineage store before it is signed.
The debug backlog, ``misses``/``attribution``/``backlog``: deterministic selection of
misses per weak category, integrated-gradients attribution, and the
``weak_categories`` backlog; ``evidence`` binds the reviewed result.
``threats``: the MITRE ATLAS and OWASP LLM Top 10 ids each attack category
of the taxonomy maps to, carried from the policy or scope to every reader.

Nothing here authorises a release: every item and evidence file says
``release_authority: "none"``.
"""
