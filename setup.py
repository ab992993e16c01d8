"""The one thing pyproject.toml cannot say yet without an "experimental" warning: the C fast
path of the first reading (lispshell/syntax/_scan.c; docs/development.md says why). Optional:
where no C compiler is, the build goes on without it and the regex path does the same work."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("lispshell.syntax._scan", ["lispshell/syntax/_scan.c"],
                             optional=True)])
