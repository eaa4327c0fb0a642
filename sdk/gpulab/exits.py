"""The CLI's exit codes (sdk/README.md, "Exit codes"), one definition for the parser (cli.py) and the commands."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CONFIG, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_TIMEOUT, EXIT_CANCELLED = range(8)
EXIT_INTERRUPTED = 130
