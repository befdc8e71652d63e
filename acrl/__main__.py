"""`python -m acrl` is the `acrl` command."""

import sys

from acrl.cli import main

sys.exit(main())
