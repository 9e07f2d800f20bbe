"""Contamination scan: the reviewer's ``flagged_pairs`` backlog.

An eval set is compared with a training pool (and with itself) through
exact 13-gram Jaccard and containment, sentence-embedding cosine and an
optional behavioral probe; every flagged eval item becomes one backlog item,
and after review ``sealdesk contamination clean`` writes the clean set.
"""
