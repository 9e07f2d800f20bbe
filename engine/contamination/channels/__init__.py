"""How an eval item is found alike to a pool document or to another eval item.

Module map of the pool stream's channels, which the scan names:

``shingles``     word shingles (every run of n words of the canonical text,
                 the whole text when it has fewer), and their fast 64-bit
                 hashes
``ngram``        exact n-gram Jaccard and containment; the eval index that
                 finds every candidate
``minhash``      datasketch MinHash signatures of the shingles, for the report
``internal``     duplicates inside the eval set, and their clusters
``embedding``    sentence embeddings: a verified model, a cache, top-k search
``calibration``  the cosine threshold, chosen from labelled pairs

Every other channel is a module of its own that declares ``CHANNEL`` (the
behavioral probe against a model endpoint, ``probe``, and the judge of unclear
pairs, ``judge``, are two), and ``registry`` finds it: nothing else lists it.

Imports only ``inputs`` of the contamination package.
"""
