"""What a contamination scan found, in the forms people and the ledger read.

Module map:

``findings``  from the channels' findings to the report, the flagged rows
              and one backlog item per flagged eval item
``spans``     the spans two texts share, as character offsets in both
``power``     what dropping items costs: the minimum detectable difference

Imports ``pool``, ``channels`` and ``inputs`` of the contamination package.
"""
