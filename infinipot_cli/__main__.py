"""`python -m infinipot_cli ...` runs the `infinipot` command."""

from .app import main

main()
