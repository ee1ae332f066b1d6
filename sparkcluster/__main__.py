import sys

from sparkcluster.cli import main

sys.exit(main())
