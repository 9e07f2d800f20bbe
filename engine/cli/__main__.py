"""``python -m engine.cli``: the engine's command tree, with the commands installed packages add."""

from engine.cli.main import main

main()
