import sys

from choragos.cli.main import main

sys.exit(main())
