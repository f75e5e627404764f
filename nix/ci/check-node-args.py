#!/usr/bin/env python3
"""Check that `spool node` accepts the arguments a unit's ExecStart gives it.

    python3 nix/ci/check-node-args.py SPOOL ARG...

SPOOL is the spool binary built from this commit; ARGs are the ExecStart words after
`SPOOL node` (see execstart-argv.py). Two checks, both by the binary itself:

1. `SPOOL node ARGS --help` exits 0: cobra parses every flag before it honours --help, so an
   unknown flag or a value its flag's type refuses (--node-id=abc) fails here;
2. no ARG is a positional argument: `spool node` takes none (cobra.NoArgs), but --help skips
   that check, so the flags are walked as pflag walks them, with the flag list and which
   flags take a value read from `SPOOL node --help`.
"""
import re
import subprocess
import sys


def main():
    if len(sys.argv) < 2:
        print("usage: check-node-args.py SPOOL ARG...", file=sys.stderr)
        return 2
    spool, args = sys.argv[1], sys.argv[2:]

    run = subprocess.run([spool, "node", *args, "--help"], capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stderr or run.stdout)
        print(f"check-node-args: `spool node ARGS --help` exited {run.returncode}: "
              f"{(run.stderr or run.stdout).strip().splitlines()[-1:]}", file=sys.stderr)
        return 1

    usage = subprocess.run([spool, "node", "--help"], capture_output=True, text=True, check=True).stdout
    # pflag's FlagUsages: "  -h, --name TYPE   usage" or "      --name   usage" (bool: no TYPE).
    takes_value = {}
    for line in usage.splitlines():
        m = re.match(r"^\s+(?:-\w, )?--([A-Za-z0-9][A-Za-z0-9-]*)( \S.*?)?(?:\s{2,}|$)", line)
        if m:
            takes_value[m.group(1)] = m.group(2) is not None
    if "node-id" not in takes_value:
        print("check-node-args: cannot read the flags from `spool node --help`", file=sys.stderr)
        return 1

    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            print("check-node-args: `--` ends the flags; spool node takes no positional arguments", file=sys.stderr)
            return 1
        if not a.startswith("-") or a == "-":
            print(f"check-node-args: '{a}' is a positional argument, which spool node refuses "
                  "(cobra.NoArgs; --help does not check that)", file=sys.stderr)
            return 1
        name = a.lstrip("-").split("=", 1)[0]
        if name not in takes_value:
            print(f"check-node-args: spool node has no flag --{name}", file=sys.stderr)
            return 1
        if "=" not in a and takes_value[name]:
            i += 1  # the flag's value is the next word
        i += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
