import sys

from lispshell.cli import main

sys.exit(main())
