"""`python -m envgen_jax.cli ...`: the `envgen-jax` command without its console script."""

import sys

from envgen_jax.cli import main

sys.exit(main())
