"""The ``rrank`` command line: ``_main`` (the subcommands) and ``_parser`` (their
argument parsers). May import anything in the package.
"""
