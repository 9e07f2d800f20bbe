"""The blind detector-gold exam: two labeler lanes, union, 2-of-3 votes, scoring.

The pipeline (docs/engines/exam.md tells it for users):

    protocol.py   the frozen protocol: version, seed, rubric, families, gates
    inputs.py     strict loading of corpus, context, lanes and labeling summary
    entities.py   NFKC entity normalization
    spans.py      claims resolved to exact source intervals, never guessed
    union.py      deterministic clustering into opaque, seeded candidates
    votes.py      lane votes and the 2-of-3 rule
    oracles.py    blind requests; third votes, sweeps, validations from files
    raters.py     the same from model endpoints
    endpoint.py   the claims and vote schemas and the lane configs, asked through
                  the shared client (engine/endpoint: strict JSON schema,
                  routing, one retry, the failure reasons, the preflight)
    failures.py   failed attempts read back from lane files
    preflight.py  the synthetic labeling request every live model is checked with
    adjudicate.py the artifact's core, built from inputs and raters
    artifact.py   sealing, code identity and the binding checks
    provenance.py the git commit, tree and lock files an artifact binds
    queue.py      backlog items for the human adjudicator
    runs.py       one adjudicate run: validate, seal, write, ingest
    resolve.py    folding signed adjudicator decisions back
    replay.py     the detector replay file
    matcher.py    exam-matcher-v0.1
    metrics.py    the seven metrics, gates and inter-rater diagnostics
    score.py      scoring a verified artifact
    label.py      live labeler lanes
    cli.py        `sealdesk exam ...`
"""
