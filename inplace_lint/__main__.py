import sys

from .adapters.cli import main

sys.exit(main())
