"""``python -m reviewer``: the ``sealdesk`` program (``reviewer.main``)."""

from reviewer.main import main

main()
