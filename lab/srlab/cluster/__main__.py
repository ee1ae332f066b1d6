import sys

from srlab.cluster.cli import main

sys.exit(main())
