"""`python -m zkbroker ...` runs the `zkbroker` command."""

from zkbroker.broker.cli.launch import main

if __name__ == "__main__":
    raise SystemExit(main())
