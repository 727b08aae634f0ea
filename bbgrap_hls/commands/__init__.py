"""Subcommands of the command line, one module each (see `bbgrap_hls.cli`)."""
