"""`python -m broker.cli ...` runs the `zkbroker` command."""

import sys

from broker.cli.main import main

sys.exit(main())
