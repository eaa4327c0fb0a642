"""The last step inside a sandbox, before the job's (or notebook server's) own program: its environment, then exec.

Usage (inside the sandbox, as the unprivileged user): python -I -S sandbox_exec.py ENV_FILE -- PROGRAM ARGS...

sandbox.py copies this file into the sandbox (bwrap --ro-bind-data) and runs it with the portal's Python, isolated
(-I: no PYTHON* variable, no user site, no script directory on sys.path) and without site (-S), after setpriv has
dropped every right (or, for a portal that is not root, as the uid of bwrap's user namespace). Until here every
process (bwrap, setpriv, this one) ran with the portal's fixed environment (PATH, LANG). ENV_FILE is the job's own
environment (a JSON object), a read-only copy inside this sandbox only; the program runs with exactly that
environment. A program that is not there ends with "cannot start 'NAME': No such file or directory" and exit 127
(126 when it cannot be run), as a shell says it. Standard library only; it imports nothing of the portal.
"""

import json
import os
import sys


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: sandbox_exec.py ENV_FILE -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    with open(argv[1], "rb") as handle:
        env = json.load(handle)
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        print("sandbox_exec.py: the environment file is not an object of strings", file=sys.stderr)
        return 2
    program = argv[3:]
    try:
        os.execvpe(program[0], program, env)  # noqa: S606 - the argv the portal was given, never a shell
    except FileNotFoundError:
        print(f"cannot start {program[0]!r}: No such file or directory", file=sys.stderr, flush=True)
        return 127
    except OSError as exc:
        print(f"cannot start {program[0]!r}: {exc.strerror}", file=sys.stderr, flush=True)
        return 126
    return 126  # not reached: execvpe returns only by raising


if __name__ == "__main__":
    sys.exit(main(sys.argv))
