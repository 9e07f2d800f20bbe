"""The blind detector-gold exam: two labeler lanes, union, 2-of-3 votes, scoring.

The pipeline (see docs/README-exam.md):

    inputs.py     strict loading of corpus, context, lanes, summary, votes, sweep, replay
    spans.py      lane claims resolved to exact source intervals
    union.py      deterministic clustering into opaque, seeded candidates
    votes.py      the 2-of-3 rule
    oracles.py    where third votes, sweeps and validation votes come from
    adjudicate.py the core of the sealed artifact, built from inputs and oracles
    artifact.py   sealing, code identity and the binding checks
    queue.py      backlog items for the human adjudicator
    resolve.py    folding signed adjudicator decisions back
    matcher.py    exam-matcher-v0.1
    metrics.py    the seven metrics, gates and inter-rater diagnostics
    score.py      scoring a sealed artifact against a detector replay
    endpoint.py   OpenAI-compatible chat endpoint (strict JSON schema, one retry)
    label.py      live labeler lanes
"""
