import sys

from lispshell.cli.main import main

sys.exit(main())
