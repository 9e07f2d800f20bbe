"""Asking an OpenAI-compatible model for strict JSON, shared by every producer that does.

The exam's lanes and adjudicator and the contamination scan's judge ask
models the same way, so they share one client and one account of failure;
neither producer imports the other (an ``independence`` contract in
``pyproject.toml``), so what both use lives here, below both.

``failures``   why an attempt failed: the closed reason vocabulary, tallies
``chat``       one model's frozen config, the request (strict schema, request
               profile, routing parameters), the checked answer, one retry
``preflight``  the four checks of a live model before any request that counts

Imports only the engine's core (``engine.rows``, ``engine.canonical``,
``engine.errors``) and httpx.
"""
