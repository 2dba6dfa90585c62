"""`python -m longhaul`: the same as the `longhaul` command."""

from longhaul.cli import main

main()
